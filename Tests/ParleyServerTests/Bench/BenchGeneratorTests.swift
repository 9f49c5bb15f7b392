import Foundation
import NIOCore
@testable import ParleyBench
import ParleyTestSupport
import Synchronization
import Testing
import WSClient

/// The load generator and the bare floor over real loopback sockets: sockets that cannot
/// connect are counted (and a run with none connected stops with a reason), the floor keeps
/// groups apart, and rate mode on several event loops still delivers each message once.
@Suite struct BenchGeneratorTests {
    static func spec(_ index: Int, group: Int = 0, port: Int, path: String = "/api/v1/ws", token: String?, conversation: String = "c",
                     isSender: Bool = false) -> SocketSpec {
        SocketSpec(
            index: index, group: group, host: "127.0.0.1", port: port, path: path, token: token, conversationId: conversation,
            isSender: isSender)
    }

    @Test func aSocketWhoseTokenTheServerRefusesIsCountedFailedAndTheOthersStayOpen() async throws {
        let server = try await TestServer.start()
        let (alice, bob, direct) = try await server.directPair()
        let generator = LoadGenerator(threads: 1, policy: SendPolicy())
        let specs = [
            Self.spec(0, port: server.port, token: alice.token, conversation: direct.id.description),
            Self.spec(1, port: server.port, token: "not-a-token", conversation: direct.id.description),
            Self.spec(2, port: server.port, token: bob.token, conversation: direct.id.description),
        ]
        let connected = await generator.connect(specs)
        #expect(connected.failed == 1)
        #expect(connected.firstError == "the server refused the WebSocket upgrade for /api/v1/ws", "\(connected.firstError ?? "nil")")
        #expect(await generator.openSockets() == 2)
        #expect(await generator.receiptLogs().map(\.socket).sorted() == [0, 2], "only connected sockets report")
        await generator.closeAll()
        await generator.shutdown()
        await server.stop()
    }

    @Test func aRunWhereNoSocketConnectsStopsWithTheReason() async throws {
        let closedPort = try freeLoopbackPort()  // nothing listens there
        let specs = (0..<3).map { Self.spec($0, port: closedPort, path: "/ws?group=0", token: nil, isSender: $0 == 0) }
        let error = await #expect(throws: BenchError.self) {
            try await LoadRun.run(specs: specs, policy: SendPolicy(), threads: 1, warmup: 0, duration: 60)
        }
        #expect(error?.description.hasPrefix("no socket connected: ") == true, "\(error?.description ?? "nil")")
        #expect(error?.description.contains("onnect") == true, "the connect error is named: \(error?.description ?? "nil")")
    }

    @Test func theFloorWrapsEachFrameOnceForTheGroupAndRepliesWithItsId() async throws {
        let server = try await BareServer.start()
        let received = try await Self.exchange(port: server.port, group: 4, frame: #"{"id":"req-17","type":"anything","n":1}"#)
        await server.stop()
        #expect(received.first == #"{"type":"hello"}"#)
        #expect(received.dropFirst().first == #"{"type":"message.created","data":{"id":"req-17","type":"anything","n":1}}"#)
        #expect(received.dropFirst(2).first == #"{"replyTo":"req-17","ok":true}"#)
        #expect(received.count == 3, "\(received)")
    }

    /// Connects to the floor in `group`, sends `frame`, and returns every text frame up to the reply.
    static func exchange(port: Int, group: Int, frame: String) async throws -> [String] {
        let texts = Texts()
        _ = try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/ws?group=\(group)", configuration: .init(autoPing: .disabled), logger: .init(label: "floor")
        ) { inbound, outbound, _ in
            var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
            while let message = try await messages.next() {
                guard case .text(let text) = message else { continue }
                texts.append(text)
                if text.contains("hello") { try await outbound.write(.text(frame)) }
                if text.contains("replyTo") { break }
            }
            try await outbound.close(.normalClosure, reason: nil)
        }
        return texts.all
    }

    @Test func theFloorDeliversOnlyWithinTheSendersGroup() async throws {
        let server = try await BareServer.start()
        // Group 0: a sender and a receiver; group 1: a receiver alone.
        let specs = [
            Self.spec(0, group: 0, port: server.port, path: "/ws?group=0", token: nil, conversation: "g0", isSender: true),
            Self.spec(1, group: 0, port: server.port, path: "/ws?group=0", token: nil, conversation: "g0"),
            Self.spec(2, group: 1, port: server.port, path: "/ws?group=1", token: nil, conversation: "g1"),
        ]
        var policy = SendPolicy()
        policy.verify = true
        policy.messagesPerSender = 8
        let result = try await LoadRun.run(specs: specs, policy: policy, threads: 1, warmup: 0, duration: 60)
        await server.stop()
        #expect(result.connectFailures == 0)
        #expect(result.stats.totalSent == 8 && result.stats.totalAcked == 8 && result.stats.totalErrors == 0)
        #expect(result.stats.totalEchoes == 8, "the floor writes to its sender too, as Parley does")
        #expect(result.stats.totalDeliveries == 8, "the lone member of group 1 received nothing")
        let logs = Dictionary(uniqueKeysWithValues: result.logs.map { ($0.socket, $0) })
        #expect(logs[2]?.counts.isEmpty == true)
        #expect(logs[1]?.counts == Dictionary(uniqueKeysWithValues: (0..<8).map { (UInt64($0), 1) }))
        #expect(logs[0]?.acked == 8)
        let check = LoadRun.verify(result)
        #expect(check.expected == 8 && check.delivered == 8 && check.missing == 0 && check.duplicates == 0 && check.strays == 0)
    }

    @Test func rateModeOnTwoLoopsDeliversEachMessageToEveryOtherMemberOnce() async throws {
        // BenchFanoutTests' tiny verified run (groups of 3, 2 in flight, ending once every
        // sender's messages are answered), here with 3 groups, 2 senders each, at 300/s on 2 loops.
        var options = BenchFanoutTests.options
        options.groups = 3
        options.sendersPerGroup = 2
        options.rate = 300
        options.threads = 2
        options.messagesPerSender = 6
        let result = try await FanoutScenario.runFloor(options: options)
        #expect(result.connectFailures == 0)
        #expect(result.stats.totalSent == 3 * 2 * 6)
        #expect(result.stats.totalAcked == 3 * 2 * 6)
        // Each message reaches the 2 other members of its group, and its sender as an echo.
        #expect(result.stats.totalDeliveries == 3 * 2 * 6 * 2 && result.stats.totalEchoes == 3 * 2 * 6)
        #expect(result.logs.count == 9)
        let check = LoadRun.verify(result)
        #expect(check.expected == 3 * 2 * 6 * 2)
        #expect(check.delivered == check.expected && check.missing == 0 && check.duplicates == 0 && check.strays == 0)
        #expect(result.stats.catchUps == 0, "the floor's frames carry no seq")
    }
}

/// Text frames one client received, in order.
private final class Texts: Sendable {
    private let texts = Mutex<[String]>([])
    func append(_ text: String) { texts.withLock { $0.append(text) } }
    var all: [String] { texts.withLock { $0 } }
}
