import Foundation
import ParleyClient
import ParleyProtocol

extension TerminalChat {
    /// Enter on the input line: a command, an edit, a reply, or a message.
    func submit(_ line: String) async {
        if let command = ChatCommand.parse(line) { return await run(command) }
        let text = line.hasPrefix("//") ? String(line.dropFirst()) : line
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return }
        guard let chat else {
            screen.status = TerminalStrings.text("Open a conversation first (↑ ↓ Enter in the list, or /dm EMAIL)")
            return
        }
        if let message = editing {
            editing = nil
            screen.inputLabel = nil
            await chat.edit(message, text: text)
            return
        }
        let reply = replyingTo
        replyingTo = nil
        screen.inputLabel = nil
        screen.scroll = 0
        let mentions = await chat.mentions(in: text)
        if let thread {
            await thread.send(text, mentions: mentions)
        } else {
            await chat.send(text, replyingTo: reply, mentions: mentions)
        }
    }

    /// Opens a conversation in the chat pane.
    func open(_ id: EntityID) async {
        guard let client else { return }
        chat?.stop()
        let model = ChatModel(client: client, conversationId: id, names: names.lookup)
        chat = model
        screen.chatTitle = list?.rows.first { $0.id == id }?.title ?? "…"
        screen.timeline = []
        screen.scroll = 0
        scrollToUnreadPending = true
        screen.overlay = nil
        screen.focus = .input
        replyingTo = nil
        editing = nil
        screen.inputLabel = nil
        if let index = screen.rows.firstIndex(where: { $0.id == id }) { screen.selectedRow = index }
        await model.start()
    }

    /// The message a command names: N from the newest, else the highlighted one, else the newest.
    func message(_ number: Int?, ownOnly: Bool = false) -> LocalMessage? {
        var messages = selectable()
        if ownOnly, number == nil, screen.selectedMessage == nil {
            messages = messages.filter { $0.senderId == session?.user.id }
        }
        if let number {
            guard number <= messages.count else {
                screen.status = TerminalStrings.text("There is no message {number} (1 is the newest)", ["number": "\(number)"])
                return nil
            }
            return messages[messages.count - number]
        }
        if let selected = screen.selectedMessage, let found = messages.first(where: { $0.id == selected }) { return found }
        guard let newest = messages.last else {
            screen.status = TerminalStrings.text("No message to act on")
            return nil
        }
        return newest
    }

    func run(_ command: ChatCommand) async {
        switch command {
        case .help:
            screen.overlayTitle = TerminalStrings.text("Commands (Esc closes)")
            screen.overlay = ChatCommand.helpLines
            if screen.chatTitle == nil { screen.chatTitle = TerminalStrings.text("Help") }
        case .quit: quitting = true
        case .close where thread != nil:
            closeThread()
        case .close:
            chat?.stop()
            chat = nil
            screen.chatTitle = nil
            screen.timeline = []
            screen.focus = .list
        case .logout:
            if let api { try? await api.logout(deviceToken: nil) }
            await stopClient()
            configuration.onSignedOut()
            session = nil
            screen = ChatScreen()
            beginLogin()
        case .retry:
            await client?.retry()
            screen.status = TerminalStrings.text("Reconnecting…")
        case .older: await chat?.loadOlder()
        case .resend:
            guard let chat else { return }
            let failed = chat.messages.filter { if case .failed = $0.delivery { true } else { $0.delivery == .notSent } }
            for message in failed { await chat.resend(message) }
            screen.status = failed.isEmpty
                ? TerminalStrings.text("Nothing to resend") : TerminalStrings.text("Sending {count} again", ["count": "\(failed.count)"])
        case .open(let what):
            if let number = Int(what), screen.rows.indices.contains(number - 1) {
                await open(screen.rows[number - 1].id)
            } else if let row = screen.rows.first(where: { $0.title.localizedCaseInsensitiveContains(what) }) {
                await open(row.id)
            } else {
                screen.status = TerminalStrings.text("No conversation matches \"{text}\"", ["text": what])
            }
        case .direct(let who):
            guard let user = await findUser(who) else { return }
            await create(CreateConversationRequest(type: .direct, participantIds: [user.id]))
        case .group(let name, let members):
            var ids: [EntityID] = []
            for member in members {
                guard let user = await findUser(member) else { return }
                ids.append(user.id)
            }
            await create(CreateConversationRequest(type: .group, participantIds: ids, name: name))
        case .rename(let name):
            await changeGroup(TerminalStrings.text("Renamed")) { api, id in try await api.rename(id, to: name) }
        case .add(let people):
            var ids: [EntityID] = []
            for person in people {
                guard let user = await findUser(person) else { return }
                ids.append(user.id)
            }
            let added = ids.count == 1
                ? TerminalStrings.text("Added 1 person") : TerminalStrings.text("Added {count} people", ["count": "\(ids.count)"])
            await changeGroup(added) { api, id in
                try await api.addParticipants(id, userIds: ids)
            }
        case .remove(let who):
            guard let user = await findUser(who) else { return }
            await changeGroup(TerminalStrings.text("Removed {name}", ["name": user.displayName])) { api, id in
                try await api.removeParticipant(id, userId: user.id)
            }
        case .leave:
            guard let me = session?.user.id, let id = chat?.conversationId else {
                screen.status = TerminalStrings.text("Open the group to leave first")
                return
            }
            await changeGroup(TerminalStrings.text("You left the group")) { api, id in try await api.removeParticipant(id, userId: me) }
            if let client { try? await client.database.forget(conversations: [id]) }
            chat?.stop()
            chat = nil
            screen.chatTitle = nil
            screen.timeline = []
            screen.focus = .list
            await list?.reload()
        case .reply(let number, let text):
            guard let target = message(number) else { return }
            if let text {
                await chat?.send(text, replyingTo: target)
            } else {
                beginReply(target)
            }
        case .edit(let number, let text):
            guard let target = message(number, ownOnly: true) else { return }
            if let text, let chat {
                guard target.senderId == session?.user.id else {
                    screen.status = TerminalStrings.text("Only your own messages can be edited")
                    return
                }
                await chat.edit(target, text: text)
            } else {
                beginEdit(target)
            }
        case .delete(let number):
            guard let target = message(number, ownOnly: true), let chat else { return }
            guard target.senderId == session?.user.id else {
                screen.status = TerminalStrings.text("Only your own messages can be deleted")
                return
            }
            await chat.revoke(target)
            leaveMessages()
        case .react(let number, let emoji):
            guard let target = message(number), let chat else { return }
            await chat.react(target, emoji: emoji)
        case .unreact(let number, let emoji):
            guard let target = message(number), let chat else { return }
            await chat.unreact(target, emoji: emoji)
        case .forward(let number, let destination):
            guard let target = message(number), let chat else { return }
            let row = Int(destination).flatMap { screen.rows.indices.contains($0 - 1) ? screen.rows[$0 - 1] : nil }
                ?? screen.rows.first { $0.title.localizedCaseInsensitiveContains(destination) }
            guard let row else {
                screen.status = TerminalStrings.text("No conversation matches \"{text}\"", ["text": destination])
                return
            }
            await chat.forward(target, to: row.id)
            screen.status = TerminalStrings.text("Forwarded to {title}", ["title": row.title])
        case .thread(let number):
            guard let target = message(number) else { return }
            await openThread(target)
        case .pin(let number, let pinned):
            guard let target = message(number), let chat else { return }
            await chat.setPinned(pinned, target)
            if chat.lastError == nil { screen.status = pinned ? TerminalStrings.text("Pinned for everyone") : TerminalStrings.text("Unpinned") }
        case .pins:
            guard let chat, let me = session?.user.id else {
                screen.status = TerminalStrings.text("Open a conversation first")
                return
            }
            screen.overlayTitle = TerminalStrings.text("{count} pinned (Esc closes)", ["count": "\(chat.pinned.count)"])
            screen.overlay = chat.pinned.map { message in
                let who = message.senderId == me ? TerminalStrings.text("You") : names.lookup(message.senderId) ?? TerminalStrings.text("Someone")
                return "📌 \(who): \(ChatPresentation.firstLine(message.text, max: 200))"
            }
        case .block(let who, let blocked):
            guard let user = await findUser(who), let client else { return }
            do {
                if blocked { try await client.block(user.id) } else { try await client.unblock(user.id) }
                screen.status = blocked
                    ? TerminalStrings.text("Blocked {name}: no direct messages, typing or alerts from them", ["name": user.displayName])
                    : TerminalStrings.text("Unblocked {name}", ["name": user.displayName])
                await chat?.reload()
            } catch {
                screen.status = ClientError.readable(error)
            }
        case .report(let number, let reason):
            guard let target = message(number), let client else { return }
            do {
                try await client.report(message: target, reason: reason)
                screen.status = TerminalStrings.text("Reported to your organization's admins")
            } catch {
                screen.status = ClientError.readable(error)
            }
        case .reportPerson(let who, let reason):
            guard let user = await findUser(who), let client else { return }
            do {
                try await client.report(user: user.id, reason: reason)
                screen.status = TerminalStrings.text("Reported {name} to your organization's admins", ["name": user.displayName])
            } catch {
                screen.status = ClientError.readable(error)
            }
        case .mute(let muted):
            guard let chat else {
                screen.status = TerminalStrings.text("Open a conversation first")
                return
            }
            await chat.setMuted(muted)
            if chat.lastError == nil {
                screen.status = muted ? TerminalStrings.text("Muted: only mentions notify you here") : TerminalStrings.text("Unmuted")
            }
        case .search(let query):
            guard let chat else {
                screen.status = TerminalStrings.text("Open a conversation to search it")
                return
            }
            let results = await chat.search(query)
            screen.overlayTitle = TerminalStrings.text("{count} found for \"{query}\" (Esc closes)", ["count": "\(results.count)", "query": query])
            screen.overlay = results.map { result in
                ChatPresentation.searchLine(
                    result, sender: names.lookup(result.message.senderId) ?? TerminalStrings.text("Someone"), calendar: Self.calendar)
            }
        case .attach(let path, let caption):
            let expanded = (path as NSString).expandingTildeInPath
            guard let chat, FileManager.default.isReadableFile(atPath: expanded) else {
                screen.status = chat == nil
                    ? TerminalStrings.text("Open a conversation first") : TerminalStrings.text("Cannot read {path}", ["path": path])
                return
            }
            let type = Self.contentType(of: expanded)
            await chat.send(
                file: URL(fileURLWithPath: expanded), contentType: type, type: .forAttachment(contentType: type), caption: caption)
        case .myName(let name):
            guard let client else { return }
            do {
                let me = try await client.setDisplayName(name)
                screen.status = TerminalStrings.text("You are now {name} to everyone", ["name": me.displayName])
            } catch {
                screen.status = ClientError.readable(error)
            }
        case .myPicture(let path):
            await setPicture(path)
        case .save(let number, let path):
            guard let target = message(number), let chat else { return }
            let expanded = (path as NSString).expandingTildeInPath
            await chat.save(target, to: URL(fileURLWithPath: expanded))
            if chat.lastError == nil { screen.status = TerminalStrings.text("Saved to {path}", ["path": expanded]) }
        case .invalid(let reason):
            screen.status = reason
        }
    }

    private func create(_ request: CreateConversationRequest) async {
        guard let api, let client else { return }
        do {
            let conversation = try await api.createConversation(request)
            try await client.database.store(conversation: conversation)
            await list?.reload()
            await open(conversation.id)
        } catch {
            screen.status = ClientError.readable(error)
        }
    }

    /// Changes the open group through `change` and says so; the server's `conversation.updated`
    /// and system message bring the change to the list and the chat.
    private func changeGroup(_ done: String, _ change: (ParleyAPI, EntityID) async throws -> Conversation) async {
        guard let api, let client, let id = chat?.conversationId else {
            screen.status = TerminalStrings.text("Open a group first")
            return
        }
        do {
            let conversation = try await change(api, id)
            if conversation.participantIds.contains(where: { $0 == session?.user.id }) {
                try await client.database.store(conversation: conversation)
            }
            await list?.reload()
            screen.status = done
        } catch {
            screen.status = ClientError.readable(error)
        }
    }

    /// A user of the organization by email, or by a unique part of the name.
    private func findUser(_ text: String) async -> User? {
        guard let api else { return nil }
        do {
            let users = try await api.users(matching: text)
            if let exact = users.first(where: { $0.email.caseInsensitiveCompare(text) == .orderedSame }) { return exact }
            let others = users.filter { $0.id != session?.user.id }
            if others.count == 1 { return others[0] }
            screen.status = others.isEmpty
                ? TerminalStrings.text("Nobody in your organization matches \"{text}\"", ["text": text])
                : TerminalStrings.text("{count} people match \"{text}\": use the email", ["count": "\(others.count)", "text": text])
        } catch {
            screen.status = ClientError.readable(error)
        }
        return nil
    }

    /// `/picture PATH` uploads an image and makes it the user's picture; `/picture off` takes
    /// it away. A file that is no image is refused here, before anything goes.
    private func setPicture(_ path: String?) async {
        guard let client else { return }
        do {
            guard let path else {
                try await client.removeAvatar()
                screen.status = TerminalStrings.text("Your picture is gone; people see your initials")
                return
            }
            let expanded = (path as NSString).expandingTildeInPath
            guard FileManager.default.isReadableFile(atPath: expanded) else {
                screen.status = TerminalStrings.text("Cannot read {path}", ["path": path])
                return
            }
            let type = Self.contentType(of: expanded)
            guard type.hasPrefix("image/") else {
                screen.status = TerminalStrings.text("A picture must be a PNG, JPEG, GIF or WebP image")
                return
            }
            try await client.setAvatar(file: URL(fileURLWithPath: expanded), contentType: type)
            screen.status = TerminalStrings.text("Your picture is set; everyone in your organization sees it")
        } catch {
            screen.status = ClientError.readable(error)
        }
    }

    static func contentType(of path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "webp": "image/webp"
        case "pdf": "application/pdf"
        case "txt", "md": "text/plain"
        default: "application/octet-stream"
        }
    }
}
