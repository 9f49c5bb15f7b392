#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI

/// A bubble's context menu: reply, thread, reactions (the quick ones, any other emoji through
/// a field, and who reacted), pin, copy, edit and delete of one's own, report and block of
/// others', resend or discard of a refused one, delete for me.
extension MessageBubbleView {
    @ViewBuilder var menu: some View {
        let message = item.message
        if item.cell != .deleted, message.isConfirmed {
            if !isInThread {
                Button { actions.reply(message) } label: { Label(tr("Reply"), systemImage: "arrowshape.turn.up.left") }
                // A thread hangs off a root in the timeline: a reply in one starts none of its own.
                if let openThread = actions.openThread, message.serverId != nil, message.threadRootId == nil {
                    Button { openThread(message) } label: { Label(tr("Reply in thread"), systemImage: "bubble.left.and.bubble.right") }
                }
            }
            Menu {
                ForEach(Self.quickReactions, id: \.self) { emoji in
                    let mine = item.myReactions.contains(emoji)
                    Button(mine ? "\(emoji) ✓" : emoji) { mine ? actions.unreact(message, emoji) : actions.react(message, emoji) }
                }
                Button(tr("Other emoji…")) { choosingEmoji = true }
                // One's own reaction that is no quick one can be taken back here too.
                ForEach(item.myReactions.filter { !Self.quickReactions.contains($0) }.sorted(), id: \.self) { emoji in
                    Button("\(emoji) ✓") { actions.unreact(message, emoji) }
                }
                if !item.reactionPeople.isEmpty {
                    Section(tr("Reacted")) { Text(item.reactionPeople) }
                }
            } label: {
                Label(tr("React"), systemImage: "face.smiling")
            }
            if let pin = actions.pin {
                let pinned = item.isPinned
                Button { pin(message, !pinned) } label: { Label(pinned ? tr("Unpin") : tr("Pin"), systemImage: pinned ? "pin.slash" : "pin") }
            }
            Button { copy(item.body) } label: { Label(tr("Copy"), systemImage: "doc.on.doc") }
            if let forward = actions.forward, message.serverId != nil {
                Button { forward(message) } label: { Label(tr("Forward…"), systemImage: "arrowshape.turn.up.right") }
            }
            if let save = actions.save, message.attachment != nil {
                Button { save(message) } label: { Label(tr("Save…"), systemImage: "square.and.arrow.down") }
            }
            if item.isOwn {
                Button { actions.edit(message) } label: { Label(tr("Edit"), systemImage: "pencil") }
                Button(role: .destructive) { actions.revoke(message) } label: { Label(tr("Delete for everyone"), systemImage: "trash") }
            }
        }
        if !item.isOwn, message.isConfirmed, item.cell != .system {
            if let report = actions.report, item.cell != .deleted {
                Button { report(message) } label: { Label(tr("Report…"), systemImage: "exclamationmark.bubble") }
            }
            if let block = actions.block {
                let blocked = message.senderBlocked
                Button(role: blocked ? nil : .destructive) { block(message, !blocked) } label: {
                    Label(blocked ? tr("Unblock \(item.senderName)") : tr("Block \(item.senderName)"), systemImage: blocked ? "person.badge.plus" : "hand.raised")
                }
            }
        }
        if item.status?.canResend == true {
            Button { actions.resend(message) } label: { Label(tr("Resend"), systemImage: "arrow.clockwise") }
            Button(role: .destructive) { actions.discard(message) } label: { Label(tr("Discard"), systemImage: "xmark") }
        }
        Button(role: .destructive) { actions.deleteForMe(message) } label: { Label(tr("Delete for me"), systemImage: "eye.slash") }
    }


    func copy(_ text: String) {
        #if os(iOS)
        UIPasteboard.general.string = text
        #elseif os(macOS)
        NSPasteboard.general.clearContents()
        NSPasteboard.general.setString(text, forType: .string)
        #endif
    }
}
#endif
