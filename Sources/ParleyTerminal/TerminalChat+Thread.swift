import Foundation
import ParleyClient
import ParleyProtocol

/// Threads in the terminal: a thread shown over the chat, and "@" completion.
extension TerminalChat {
    /// Shows a message's thread: its root and replies; lines typed now reply in it.
    func openThread(_ root: LocalMessage) async {
        guard let client, let chat else { return }
        guard let rootId = root.serverId, root.threadRootId == nil else {
            screen.status = root.threadRootId != nil
                ? TerminalStrings.text("That is a reply in a thread already") : TerminalStrings.text("That message has not reached the server yet")
            return
        }
        thread?.stop()
        let model = ThreadModel(client: client, conversationId: chat.conversationId, rootId: rootId)
        thread = model
        leaveMessages()
        replyingTo = nil
        editing = nil
        screen.inputLabel = "💬 " + TerminalStrings.text("thread")
        screen.scroll = 0
        await model.start()
    }

    /// Back to the conversation's timeline.
    func closeThread() {
        thread?.stop()
        thread = nil
        screen.inputLabel = nil
        screen.selectedMessage = nil
        screen.scroll = 0
    }

    /// The root (when cached) then the replies, as the thread view lists them.
    func threadMessages(_ thread: ThreadModel) -> [LocalMessage] {
        (thread.root.map { [$0] } ?? []) + thread.replies
    }

    /// Tab after "@name": the first participant it may mean; the others are named below.
    func completeMention() async {
        guard let chat else { return }
        let candidates = await chat.mentionCandidates(for: screen.input.text)
        guard let first = candidates.first else {
            screen.status = TerminalStrings.text("Nobody here is called that")
            return
        }
        screen.input.set(ChatPresentation.completingMention(screen.input.text, with: first.name))
        if candidates.count > 1 {
            let others = candidates.dropFirst().map { "@" + $0.name }.joined(separator: ", ")
            screen.status = TerminalStrings.text("Also: {names}", ["names": others])
        }
    }
}
