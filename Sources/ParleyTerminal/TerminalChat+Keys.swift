import Foundation
import ParleyClient
import ParleyProtocol
import Synchronization

extension TerminalChat {
    // MARK: Keys

    func handle(_ key: Key) async {
        if key == .control("c") || key == .control("d") && screen.input.text.isEmpty {
            quitting = true
            return
        }
        if key == .control("l") {
            device.invalidate()
            return
        }
        if login != nil { return await handleLogin(key) }
        screen.status = nil
        switch screen.focus {
        case .list: await handleListKey(key)
        case .messages: await handleMessageKey(key)
        case .input: await handleInputKey(key)
        }
    }

    private func handleListKey(_ key: Key) async {
        switch key {
        case .up: screen.selectedRow = max(0, screen.selectedRow - 1)
        case .down:
            screen.selectedRow = min(max(0, screen.rows.count - 1), screen.selectedRow + 1)
            // Near the end of what is here: the next older page of conversations.
            if screen.selectedRow >= screen.rows.count - 3, let list, list.hasMore { await list.loadMore() }
        case .enter, .right:
            if screen.rows.indices.contains(screen.selectedRow) { await open(screen.rows[screen.selectedRow].id) }
        case .tab, .escape: screen.focus = .input
        case .character, .paste:
            // Typing (or pasting) starts a message or a command.
            screen.focus = .input
            screen.input.handle(key)
        default: break
        }
    }

    private func handleInputKey(_ key: Key) async {
        switch key {
        case .enter:
            let line = screen.input.submit()
            await submit(line)
        case .tab where ChatPresentation.mentionQuery(in: screen.input.text) != nil && chat != nil:
            await completeMention()
        case .tab:
            screen.focus = .list
        case .escape where thread != nil && replyingTo == nil && editing == nil && screen.overlay == nil:
            closeThread()
        case .escape:
            if replyingTo != nil || editing != nil {
                replyingTo = nil
                editing = nil
                screen.inputLabel = nil
                screen.input.set("")
            } else if screen.overlay != nil {
                screen.overlay = nil
            } else {
                screen.focus = .list
            }
        case .pageUp where screen.overlay != nil:
            screen.overlayScroll = max(0, screen.overlayScroll - 10)
        case .pageDown where screen.overlay != nil:
            // Bounded when drawn (the wrapped length depends on the width).
            screen.overlayScroll = min(screen.overlayScroll + 10, (screen.overlay?.count ?? 0) * 4)
        case .pageUp:
            let (width, height) = device.size()
            if screen.pageUp(width: width, height: height), let chat, chat.canLoadOlder { await chat.loadOlder() }
        case .pageDown:
            let (width, height) = device.size()
            screen.pageDown(width: width, height: height)
        case .up where screen.input.text.isEmpty && chat != nil:
            screen.focus = .messages
            screen.selectedMessage = selectable().last?.id
        default:
            screen.input.handle(key)
            // A paste is typing too (it never sends or runs a command by itself: Enter does).
            switch key {
            case .character, .paste:
                if let chat, !screen.input.text.hasPrefix("/") { Task { await chat.userIsTyping() } }
            default: break
            }
        }
    }

    private func handleMessageKey(_ key: Key) async {
        let messages = selectable()
        let index = messages.firstIndex { $0.id == screen.selectedMessage } ?? messages.count - 1
        guard messages.indices.contains(index) else {
            screen.focus = .input
            return
        }
        let message = messages[index]
        switch key {
        case .up: screen.selectedMessage = messages[max(0, index - 1)].id
        case .down:
            if index + 1 < messages.count { screen.selectedMessage = messages[index + 1].id } else { leaveMessages() }
        case .escape, .tab: leaveMessages()
        case .character("r"): beginReply(message)
        case .character("e"): beginEdit(message)
        case .character("d"): await run(.delete(message: messages.count - index))
        case .character("+"):
            leaveMessages()
            screen.input.set("/react \(messages.count - index) ")
        case .character("f"):
            leaveMessages()
            screen.input.set("/forward \(messages.count - index) ")
        case .enter:
            if case .failed = message.delivery { await chat?.resend(message) } else { beginReply(message) }
        case .paste:
            // Pasted text goes to the input line; its letters are never message actions ("d" deletes).
            leaveMessages()
            screen.input.handle(key)
        default: break
        }
    }

    func leaveMessages() {
        screen.focus = .input
        screen.selectedMessage = nil
    }

    /// The messages a command can name: the chat's (or the open thread's root and replies),
    /// without system notices, oldest first.
    func selectable() -> [LocalMessage] {
        (thread.map(threadMessages) ?? chat?.messages ?? []).filter { $0.type != .system }
    }

    func beginReply(_ message: LocalMessage) {
        leaveMessages()
        replyingTo = message
        editing = nil
        let who = message.senderId == session?.user.id
            ? TerminalStrings.text("yourself") : names.lookup(message.senderId) ?? TerminalStrings.text("Someone")
        screen.inputLabel = "↪ " + TerminalStrings.text("reply to {name}", ["name": who])
    }

    func beginEdit(_ message: LocalMessage) {
        leaveMessages()
        guard message.senderId == session?.user.id, message.deletedAt == nil else {
            screen.status = TerminalStrings.text("Only your own messages can be edited")
            return
        }
        editing = message
        replyingTo = nil
        screen.inputLabel = "✎ " + TerminalStrings.text("edit")
        screen.input.set(message.text)
    }
}
