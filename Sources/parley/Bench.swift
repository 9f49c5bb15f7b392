import ArgumentParser
import Foundation
import Logging
import ParleyClient
import ParleyProtocol
import ParleyServer

/// `parley bench`: measurements of a real server over the real protocol.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure Parley: the server over the real protocol, and the SDK's local paths.", subcommands: [
            Latency.self, ClientBench.self, Fanout.self, Durable.self, Connections.self, Catchup.self, Multinode.self, ListBench.self,
            BareServerCommand.self, ConnectionsWorker.self, Chaos.self, ChaosClient.self, Partition.self, LinkDelay.self, Soak.self, Storm.self, StormWorker.self,
        ])
}

/// Send→receive latency over WebSocket, one message at a time, against a ping floor.
struct Latency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send→receive latency over the WebSocket (p50/p90/p99), with a ping round trip as the floor.")

    @Option(help: "Messages to send.") var count: Int = 1000
    @Option(help: "Server URL to drive; default: start one in-process on a temporary SQLite file.") var server: String?

    func run() async throws {
        guard count > 0 else { throw fail("count must be positive") }
        var inProcess: (app: ParleyApp, stop: @Sendable () async -> Void)?
        let baseURL: URL
        if let server {
            guard let url = URL(string: server) else { throw fail("bad server URL") }
            baseURL = url
        } else {
            let started = try await Self.startServer()
            inProcess = (started.app, started.stop)
            baseURL = started.url
        }
        let organization = "bench-\(UUID().uuidString.prefix(8))"
        let api = ParleyAPI(baseURL: baseURL)
        let sender = try await api.register(.init(organization: organization, email: "sender@bench.io", password: "bench-password", displayName: "Sender"))
        let receiver = try await api.register(.init(organization: organization, email: "receiver@bench.io", password: "bench-password", displayName: "Receiver"))
        let conversation = try await ParleyAPI(baseURL: baseURL, token: sender.token)
            .createConversation(.init(type: .direct, participantIds: [receiver.user.id]))
        let sendSocket = RealtimeConnection(serverURL: baseURL, token: sender.token)
        let receiveSocket = RealtimeConnection(serverURL: baseURL, token: receiver.token)
        _ = try await sendSocket.connect()
        _ = try await receiveSocket.connect()
        var events = receiveSocket.events.makeAsyncIterator()
        let clock = ContinuousClock()

        // Warm up connections, caches and the database file.
        /// The next `message.created` on the receiver (presence and list updates are skipped).
        func nextMessage() async throws -> Message {
            while let event = await events.next() {
                if case .messageCreated(let payload) = event { return payload.message }
            }
            throw fail("receiver lost its connection")
        }
        for index in 0..<min(50, count) {
            _ = try await sendSocket.sendMessage(.init(conversationId: conversation.id, clientMessageId: "warm-\(index)", text: "warm"))
            _ = try await nextMessage()
        }
        var pings: [Duration] = []
        for _ in 0..<count {
            let start = clock.now
            try await sendSocket.ping()
            pings.append(clock.now - start)
        }
        var delivered: [Duration] = []
        var acknowledged: [Duration] = []
        let runStart = clock.now
        for index in 0..<count {
            let start = clock.now
            async let ack: Duration = {
                _ = try await sendSocket.sendMessage(.init(conversationId: conversation.id, clientMessageId: "m-\(index)", text: "message \(index)"))
                return clock.now - start
            }()
            let received = try await nextMessage()
            guard received.clientMessageId == "m-\(index)" else { throw fail("out of order: \(received.clientMessageId)") }
            delivered.append(clock.now - start)
            acknowledged.append(try await ack)
        }
        let elapsed = clock.now - runStart
        await sendSocket.close()
        await receiveSocket.close()
        if let inProcess { await inProcess.stop() }

        let rows = [("ping round trip (floor)", pings), ("send → stored ack", acknowledged), ("send → received", delivered)]
        print("parley bench latency: \(count) messages, one at a time, \(server ?? "in-process server, SQLite")")
        print("metric                      p50 ms   p90 ms   p99 ms   max ms")
        for (name, samples) in rows {
            let p = Percentiles(samples)
            print(name.padding(toLength: 26, withPad: " ", startingAt: 0)
                + [p.p50, p.p90, p.p99, p.max].map { String(format: "%9.3f", $0) }.joined())
        }
        let receive = Percentiles(delivered), floor = Percentiles(pings)
        let rate = Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        print(String(format: "sequential rate: %.0f messages/s; p50 receive / p50 ping: %.2fx", rate, receive.p50 / floor.p50))
        let json: [String: Any] = [
            "scenario": "latency", "count": count,
            "receive_ms": ["p50": receive.p50, "p90": receive.p90, "p99": receive.p99, "max": receive.max],
            "ack_ms": ["p50": Percentiles(acknowledged).p50, "p99": Percentiles(acknowledged).p99],
            "ping_ms": ["p50": floor.p50, "p99": floor.p99],
            "messages_per_second": rate,
        ]
        print(String(decoding: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), as: UTF8.self))
    }

    static func startServer(
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> (app: ParleyApp, url: URL, stop: @Sendable () async -> Void) {
        var configuration = ServerConfiguration()
        configuration.openOrganizations = true  // registers many users into one organization by name
        configuration.rateLimits = .off  // a benchmark floods on purpose
        configuration.port = 0
        configuration.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-bench-\(UUID().uuidString)").path
        configuration.bcryptCost = 4
        configuration.logLevel = .error
        configure(&configuration)
        var logger = Logger(label: "parley.bench")
        logger.logLevel = .error
        let app = try await ParleyApp(configuration: configuration, logger: logger)
        let running = try await app.startInBackground()
        let directory = configuration.dataDirectory
        return (app, URL(string: "http://127.0.0.1:\(running.port)")!, {
            await running.stop()
            try? FileManager.default.removeItem(atPath: directory)
        })
    }
}

/// The server a scenario drives: the one `--server` names, or one `start` starts in-process
/// (then `stop` stops it).
func benchTarget(
    _ server: String?, start: () async throws -> (url: URL, stop: @Sendable () async -> Void)
) async throws -> (url: URL, stop: (@Sendable () async -> Void)?) {
    guard let server else {
        let started = try await start()
        return (started.url, started.stop)
    }
    guard let url = URL(string: server) else { throw fail("bad server URL") }
    return (url, nil)
}

/// Percentiles of durations, in milliseconds (nearest rank).
struct Percentiles {
    let p50: Double, p90: Double, p99: Double, max: Double

    init(_ samples: [Duration]) {
        let sorted = samples.map { Double($0.components.seconds) * 1000 + Double($0.components.attoseconds) / 1e15 }.sorted()
        func rank(_ q: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[Swift.min(sorted.count - 1, Int((q * Double(sorted.count)).rounded(.up)) - 1)]
        }
        p50 = rank(0.5)
        p90 = rank(0.9)
        p99 = rank(0.99)
        max = sorted.last ?? 0
    }
}
