import ArgumentParser
import Foundation
import ParleyClient
import ParleyProtocol

/// `parley tail`: prints live events as readable lines until interrupted.
struct Tail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print live messages and events as they arrive.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        let (profile, api) = try options.session()
        let people = try await clientCall { try await api.users() }
        let names = Dictionary(uniqueKeysWithValues: people.map { ($0.id, $0.displayName) })
        let connection = RealtimeConnection(serverURL: api.baseURL, token: profile.token, trust: api.trust)
        let hello = try await clientCall { try await connection.connect() }
        // Written unbuffered, so a pipe or file sees each event as it arrives.
        emit("Connected as \(hello.user.displayName); waiting for events (Ctrl-C to stop)")
        for await event in connection.events {
            emit(line(for: event, names: names))
        }
        throw fail(await connection.closedReason?.description ?? "connection closed", code: 2)
    }

    func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func line(for event: ServerEvent, names: [EntityID: String]) -> String {
        func name(_ id: EntityID) -> String { names[id] ?? String(id.description.prefix(8)) }
        switch event {
        case .hello(let hello): return "hello \(hello.user.displayName)"
        case .messageCreated(let event): return "[\(event.message.conversationId.description.prefix(8))] " + MessageLine.render(event.message, names: names)
        case .messageUpdated(let event): return "[\(event.message.conversationId.description.prefix(8))] updated " + MessageLine.render(event.message, names: names)
        case .conversationUpdated(let event):
            return "conversation \(event.conversation.id) \(event.conversation.name ?? "") now has \(event.conversation.memberCount) participants, seq \(event.conversation.lastSeq)"
        case .typing(let event): return "\(name(event.userId)) \(event.isTyping ? "is typing…" : "stopped typing")"
        case .receipt(let event): return "\(name(event.userId)) read up to #\(event.readSeq), received up to #\(event.deliveredSeq)"
        case .presence(let event): return "\(name(event.userId)) is \(event.isOnline ? "online" : "offline")"
        case .receiptSummary(let event):
            return "[\(event.conversationId.description.prefix(8))] #\(event.seq) read by \(event.readCount), received by \(event.deliveredCount)"
        case .typingSummary(let event): return "[\(event.conversationId.description.prefix(8))] \(event.count) typing"
        case .conversationActivity(let event): return "[\(event.conversationId.description.prefix(8))] activity up to seq \(event.lastSeq)"
        }
    }
}
