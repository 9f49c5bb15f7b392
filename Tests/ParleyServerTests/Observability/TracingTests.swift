import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A message's path as an operator reads it: `parley serve --tracing otlp` exports spans over
/// OTLP/HTTP to a collector (a real one's protocol, on a loopback port), and one send is one
/// trace from the command to the fan-out, and on to the node that delivers it elsewhere.
@Suite struct TracingTests {
    /// The variables that point a node's spans at the collector, exported at once.
    static func tracing(_ collector: OTLPCollector) -> [String: String] {
        [
            "PARLEY_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_BSP_SCHEDULE_DELAY": "50",
        ]
    }

    /// Waits for the collector to hold a span named `name` in the trace (any trace when nil).
    static func span(_ name: String, in trace: String?, of collector: OTLPCollector) async throws -> OTLPCollector.Span {
        try await waitFor("the span \(name)", timeout: .seconds(30)) {
            collector.received.contains { $0.name == name && (trace == nil || $0.traceId == trace) }
        }
        return collector.received.first { $0.name == name && (trace == nil || $0.traceId == trace) }!
    }

    /// Alice and Bob of one organization, and their direct conversation.
    static func directPair(on node: ServeProcess) async throws -> (alice: AuthResponse, bob: AuthResponse, direct: Conversation) {
        let api = ParleyAPI(baseURL: node.url)
        let alice = try await api.register(RegisterRequest(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
        let bob = try await api.register(RegisterRequest(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let direct = try await ParleyAPI(baseURL: node.url, token: alice.token).createConversation(.init(type: .direct, participantIds: [bob.user.id]))
        return (alice, bob, direct)
    }

    @Test(.heavy) func aRESTSendIsOneTraceFromTheCallersContextToTheFanOut() async throws {
        let collector = try await OTLPCollector()
        let log = TestServer.temporaryDirectory() + "/serve.log"
        let fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(fd) }
        let node = try ServeProcess(name: "traced", arguments: ["--log-level", "info"], environment: Self.tracing(collector), output: fd)
        defer { node.stop() }
        try await node.waitUntilReady()
        let (alice, bob, direct) = try await Self.directPair(on: node)

        // The caller's own trace (a gateway or app in front of Parley) is joined, not replaced.
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736", callerSpan = "00f067aa0ba902b7"
        var request = URLRequest(url: node.url.appendingPathComponent("api/v1/conversations/\(direct.id)/messages"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(alice.token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("00-\(trace)-\(callerSpan)-01", forHTTPHeaderField: "traceparent")
        request.httpBody = Data(#"{"clientMessageId":"traced-1","text":"hello, traced"}"#.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 201)

        let fanout = try await Self.span("fanout", in: trace, of: collector)
        // Spans are exported in batches: the request's own span can come in a batch after the
        // fan-out's (a full suite on 2 cores showed it).
        try await waitFor("the request's server span") { collector.received.contains { $0.traceId == trace && $0.kind == 2 } }
        let spans = collector.received.filter { $0.traceId == trace }
        let http = try #require(spans.first { $0.kind == 2 })
        #expect(http.parentSpanId == callerSpan)
        #expect(http.resource["service.name"] == "parley")
        let send = try #require(spans.first { $0.name == "chat.send" })
        #expect(send.parentSpanId == http.spanId)
        #expect(send.attributes["parley.conversation"] == direct.id.description)
        #expect(send.attributes["parley.seq"] == "1")
        let checks = try #require(spans.first { $0.name == "rules.validate" })
        #expect(checks.parentSpanId == send.spanId)
        let commit = try #require(spans.first { $0.name == "store.commit" })
        #expect(commit.parentSpanId == send.spanId)
        #expect(Int(commit.attributes["parley.commit.batch_size"] ?? "") ?? 0 >= 1)
        #expect(commit.attributes["parley.commit.batch"] != nil)
        #expect(commit.attributes["parley.commit.transaction_us"] != nil)
        // The rule ran inside the commit's transaction, and the span says when.
        let rule = try #require(spans.first { $0.name == "rules.send" })
        #expect(rule.parentSpanId == commit.spanId)
        #expect(rule.startNanos >= commit.startNanos && rule.endNanos <= commit.endNanos)
        #expect(fanout.parentSpanId == send.spanId)
        #expect(fanout.attributes["parley.recipients"] == "2")
        #expect(fanout.startNanos >= commit.endNanos)
        #expect(collector.malformed == 0)

        // A log line written inside a span carries its trace id.
        var registration = URLRequest(url: node.url.appendingPathComponent("api/v1/auth/register"))
        registration.httpMethod = "POST"
        registration.setValue("application/json", forHTTPHeaderField: "Content-Type")
        registration.setValue("00-\(trace)-\(callerSpan)-01", forHTTPHeaderField: "traceparent")
        registration.httpBody = Data(#"{"organization":"acme","email":"carol@x.io","password":"\#(TestUser.password)","displayName":"Carol"}"#.utf8)
        _ = try await URLSession.shared.data(for: registration)
        try await waitFor("the registration's log line with its trace id") {
            let lines = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return lines.split(separator: "\n").contains { $0.contains("Registered user") && $0.contains("trace_id=\(trace)") }
        }

        // A retry of the same send is a trace too, and says it created nothing.
        let retryTrace = "4bf92f3577b34da6a3ce929d0e0e4737"
        request.setValue("00-\(retryTrace)-\(callerSpan)-01", forHTTPHeaderField: "traceparent")
        _ = try await URLSession.shared.data(for: request)
        let retried = try await Self.span("chat.send", in: retryTrace, of: collector)
        #expect(retried.attributes["parley.created"] == "false")
        #expect(!collector.received.contains { $0.traceId == retryTrace && $0.name == "fanout" })
    }

    @Test(.heavy) func aWebSocketSendIsATraceOfItsOwnAndAFailedOneSaysWhy() async throws {
        let collector = try await OTLPCollector()
        let node = try ServeProcess(name: "traced", environment: Self.tracing(collector))
        defer { node.stop() }
        try await node.waitUntilReady()
        let (alice, bob, direct) = try await Self.directPair(on: node)
        let socket = RealtimeConnection(serverURL: node.url, token: alice.token)
        _ = try await socket.connect()
        defer { Task { await socket.close() } }
        _ = try await socket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "ws-1", text: "over the socket"))

        let command = try await Self.span("WebSocket send_message", in: nil, of: collector)
        #expect(command.kind == 2)
        #expect(command.parentSpanId.isEmpty)
        _ = try await Self.span("fanout", in: command.traceId, of: collector)
        let send = try #require(collector.received.first { $0.traceId == command.traceId && $0.name == "chat.send" })
        #expect(send.parentSpanId == command.spanId)

        // A refused send (too long a text) ends its spans as errors, before anything is queued.
        let tooLong = String(repeating: "x", count: Limits.maxTextCharacters + 1)
        await #expect(throws: (any Error).self) {
            _ = try await socket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "ws-2", text: tooLong))
        }
        try await waitFor("the refused send's spans") {
            collector.received.contains { $0.name == "WebSocket send_message" && $0.status == 2 }
        }
        let refused = try #require(collector.received.first { $0.name == "WebSocket send_message" && $0.status == 2 })
        let spans = collector.received.filter { $0.traceId == refused.traceId }
        #expect(Set(spans.map(\.name)) == ["WebSocket send_message", "chat.send", "rules.validate"])
        #expect(spans.allSatisfy { $0.status == 2 })
        #expect(command.status != 2)
    }
}

/// Spans cost nothing while tracing is off: no span is made, and no trace context rides a
/// cluster record.
@Suite struct TracingOffTests {
    @Test func offMakesNoSpanAndNoContext() {
        #expect(!ServerTracing.isEnabled)
        #expect(ServerTracing.start("chat.send") == nil)
        #expect(ServerTracing.currentTraceparent() == nil)
    }
}

/// One message across two nodes on one PostgreSQL: the node that delivers it to the other
/// user continues the sender's trace under the sender's fan-out.
@Suite(.needsPostgres) struct ClusterTracingTests {
    @Test(.heavy) func aMessagesTraceCrossesToTheNodeThatDeliversIt() async throws {
        let database = try await TestDatabase.create()
        let collector = try await OTLPCollector()
        let (a, b) = try await ServeProcess.readyPair(databaseURL: database.url, environment: TracingTests.tracing(collector))
        defer {
            a.stop()
            b.stop()
            Task { await database.drop() }
        }
        let alice = try await ParleyAPI(baseURL: a.url).register(
            RegisterRequest(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
        let bob = try await ParleyAPI(baseURL: b.url).register(
            RegisterRequest(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let direct = try await ParleyAPI(baseURL: a.url, token: alice.token).createConversation(.init(type: .direct, participantIds: [bob.user.id]))
        let aliceOnA = RealtimeConnection(serverURL: a.url, token: alice.token)
        let bobOnB = RealtimeConnection(serverURL: b.url, token: bob.token)
        _ = try await aliceOnA.connect()
        _ = try await bobOnB.connect()
        let bobsEvents = EventRecorder(bobOnB)
        defer {
            Task {
                await aliceOnA.close()
                await bobOnB.close()
            }
        }
        let sent = try await aliceOnA.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "x-1", text: "across"))
        try await bobsEvents.wait("Bob's copy, through B") { events in
            events.contains { if case .messageCreated(let event) = $0 { event.message.id == sent.id } else { false } }
        }

        let deliver = try await TracingTests.span("cluster.deliver", in: nil, of: collector)
        #expect(deliver.resource["service.instance.id"] == "node-b")
        #expect(deliver.kind == 5)
        #expect(deliver.attributes["parley.origin"] == "node-a")
        #expect(deliver.attributes["parley.seq"] == "\(sent.seq ?? 0)")
        let fanout = try await TracingTests.span("fanout", in: deliver.traceId, of: collector)
        #expect(fanout.resource["service.instance.id"] == "node-a")
        #expect(deliver.parentSpanId == fanout.spanId)
        let command = try await TracingTests.span("WebSocket send_message", in: deliver.traceId, of: collector)
        #expect(command.resource["service.instance.id"] == "node-a")
        #expect(deliver.startNanos >= fanout.startNanos)
    }
}
