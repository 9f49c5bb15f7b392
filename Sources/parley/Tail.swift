import ArgumentParser
import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer

/// `parley tail`: prints live events as readable lines until interrupted.
struct Tail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print live messages and events as they arrive; after a dropped connection, reconnect and print what came meanwhile.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        let (_, api) = try options.session()
        let people = try await clientCall { try await api.users() }
        var names = Dictionary(uniqueKeysWithValues: people.map { ($0.id, $0.displayName) })
        // The newest seq printed or known per conversation: after a reconnect, what came in
        // between is fetched and printed once (an event for a message already printed is not).
        var printed: [EntityID: Int64] = [:]
        // Where each conversation stands before the socket opens: anything after it arrives as
        // an event or is printed by the catch-up below (noting it after the socket opened would
        // swallow a message stored in between: its event would look printed already).
        for conversation in try await clientCall({ try await api.conversations() }) { printed[conversation.id] = conversation.lastSeq }
        var attempt = 0
        var connected = false
        while true {
            let credentials = api.credentials!
            let connection: RealtimeConnection
            do {
                connection = RealtimeConnection(
                    serverURL: api.baseURL, token: try await credentials.validToken(using: api), trust: api.trust)
            } catch let error as ClientError where error.code == .unauthorized {
                throw fail("the server refused this profile's session: \(error.description); `parley login` again")
            } catch {
                attempt += 1
                try await pause(before: attempt, because: "\(error)")
                continue
            }
            do {
                let hello = try await connection.connect()
                attempt = 0
                if connected {
                    note("reconnected")
                    if let people = try? await api.users() { for user in people { names[user.id] = user.displayName } }
                }
                try await catchUp(api, printed: &printed, names: names, printing: true)
                if !connected {
                    // Written unbuffered, so a pipe or file sees each event as it arrives.
                    emit("Connected as \(TerminalOutput.inline(hello.user.displayName)); waiting for events (Ctrl-C to stop)")
                }
                connected = true
            } catch let error as ClientError where !connected || error.code == .unauthorized {
                // The first connection, or a refused token: one line and the documented exit code.
                throw fail(error.description, code: error.kind == .server ? 1 : 2)
            } catch {
                attempt += 1
                try await pause(before: attempt, because: "\(error)")
                continue
            }
            // Access tokens live minutes: the open connection is renewed in time (`auth`).
            let renewal = Task { await Self.keepRenewed(connection, credentials: credentials, api: api) }
            defer { renewal.cancel() }
            for await event in connection.events {
                if case .messageCreated(let created) = event {
                    let (id, seq) = (created.message.conversationId, created.message.seq)
                    if let known = printed[id], seq <= known { continue }
                    printed[id] = seq
                }
                let said = line(for: event, names: names)
                if case .userUpdated(let updated) = event { names[updated.user.id] = updated.user.displayName }
                emit(said)
            }
            if await connection.closeCode == MembershipService.deactivatedCloseCode {
                throw fail("signed out by the server: \(await connection.closedReason?.description ?? "session ended"); `parley login` again")
            }
            attempt += 1
            try await pause(before: attempt, because: await connection.closedReason?.description ?? "connection closed")
        }
    }

    /// Renews the sign-in when its access token is within its renewal window, and hands the new
    /// token to the open connection, until cancelled. A refused renewal is left to the server,
    /// which closes the connection with 4001 when the token expires.
    static func keepRenewed(_ connection: RealtimeConnection, credentials: SessionCredentials, api: ParleyAPI) async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: .seconds(15))
                guard credentials.tokens.renewalIsDue(at: Date()) else { continue }
                let renewed = try await credentials.renew(using: api)
                try await connection.perform(.auth(AuthCommand(token: renewed.token)))
            } catch is CancellationError {
                return
            } catch {
                continue
            }
        }
    }

    /// Prints, once, the messages of each conversation newer than what was printed or known
    /// (after a reconnect); on the first connection only notes where each conversation stands.
    func catchUp(_ api: ParleyAPI, printed: inout [EntityID: Int64], names: [EntityID: String], printing: Bool) async throws {
        for conversation in try await api.conversations() {
            guard let known = printed[conversation.id] else {
                printed[conversation.id] = conversation.lastSeq
                continue
            }
            var after = known
            while printing, after < conversation.lastSeq {
                let page = try await api.messages(conversation.id, after: after, limit: Limits.messagesPageMax)
                for message in page.messages where message.seq > after {
                    emit("[\(conversation.id.description.prefix(8))] " + MessageLine.render(message, names: names))
                    after = message.seq
                }
                if page.messages.isEmpty || !page.hasMore { break }
            }
            printed[conversation.id] = max(after, conversation.lastSeq)
        }
    }

    /// Waits before reconnecting: 0.5 s doubling to 30 s, with jitter, said on stderr.
    func pause(before attempt: Int, because reason: String) async throws {
        let base = min(30, 0.5 * pow(2, Double(min(attempt - 1, 10))))
        let delay = base / 2 + Double.random(in: 0...(base / 2))
        note("connection lost (\(reason)); reconnecting in \(String(format: "%.1f", delay)) s")
        try await Task.sleep(for: .seconds(delay))
    }

    /// A line about the connection, on stderr (standard output carries only events).
    func note(_ text: String) {
        FileHandle.standardError.write(Data("parley tail: \(TerminalOutput.safe(text))\n".utf8))
    }

    /// One line, unbuffered, with whatever others wrote in it made inert.
    func emit(_ line: String) { TerminalOutput.say(line) }

    func line(for event: ServerEvent, names: [EntityID: String]) -> String {
        func name(_ id: EntityID) -> String { TerminalOutput.inline(names[id] ?? String(id.description.prefix(8))) }
        switch event {
        case .hello(let hello): return "hello \(TerminalOutput.inline(hello.user.displayName))"
        case .messageCreated(let event): return "[\(event.message.conversationId.description.prefix(8))] " + MessageLine.render(event.message, names: names)
        case .messageUpdated(let event): return "[\(event.message.conversationId.description.prefix(8))] updated " + MessageLine.render(event.message, names: names)
        case .conversationUpdated(let event):
            return "conversation \(event.conversation.id) \(TerminalOutput.inline(event.conversation.name ?? "")) now has \(event.conversation.memberCount) participants, seq \(event.conversation.lastSeq)"
        case .typing(let event): return "\(name(event.userId)) \(event.isTyping ? "is typing…" : "stopped typing")"
        case .receipt(let event): return "\(name(event.userId)) read up to #\(event.readSeq), received up to #\(event.deliveredSeq)"
        case .presence(let event): return "\(name(event.userId)) is \(event.isOnline ? "online" : "offline")"
        case .receiptSummary(let event):
            return "[\(event.conversationId.description.prefix(8))] #\(event.seq) read by \(event.readCount), received by \(event.deliveredCount)"
        case .typingSummary(let event): return "[\(event.conversationId.description.prefix(8))] \(event.count) typing"
        case .conversationActivity(let event): return "[\(event.conversationId.description.prefix(8))] activity up to seq \(event.lastSeq)"
        case .userUpdated(let event):
            let now = TerminalOutput.inline(event.user.displayName)
            let before = name(event.user.id)
            return before == now ? "\(now) changed their picture" : "\(before) is now called \(now)"
        }
    }
}
