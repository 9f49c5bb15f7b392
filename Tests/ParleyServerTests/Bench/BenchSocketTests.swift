import Foundation
import NIOCore
import NIOEmbedded
import NIOWebSocket
@testable import ParleyBench
import Testing

/// The generator's socket handler on an embedded channel, frame by frame: what it sends, how
/// it keeps its window, and how it files what arrives (acks, refusals, deliveries, echoes,
/// seq jumps). No network, so every figure is exact.
@Suite struct BenchSocketTests {
    /// One `BenchSocket` on an `EmbeddedChannel`, registered on its loop state as the
    /// generator registers it after the upgrade.
    final class Harness {
        let channel = EmbeddedChannel()
        let state: LoopState
        let socket: BenchSocket

        init(index: Int = 3, isSender: Bool = true, policy: SendPolicy = SendPolicy(), state: LoopState? = nil) throws {
            self.state = state ?? LoopState(loop: channel.embeddedEventLoop)
            if state == nil { self.state.policy = policy }
            let spec = SocketSpec(
                index: index, group: 0, host: "127.0.0.1", port: 1, path: "/api/v1/ws", token: nil, conversationId: "conv-1",
                isSender: isSender)
            socket = BenchSocket(spec: spec, state: self.state, ready: channel.embeddedEventLoop.makePromise(of: Void.self))
            try channel.pipeline.syncOperations.addHandler(socket)
            self.state.sockets.append(socket)
            if isSender { self.state.senders.append(socket) }
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        deinit { _ = try? channel.finish(acceptAlreadyClosed: true) }

        func receive(_ text: String, fin: Bool = true, opcode: WebSocketOpcode = .text) throws {
            try channel.writeInbound(WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(string: text)))
        }

        func hello() throws { try receive(#"{"type":"hello","data":{}}"#) }

        /// Every frame written and flushed since the last call.
        func written() throws -> [WebSocketFrame] {
            var frames: [WebSocketFrame] = []
            while let frame = try channel.readOutbound(as: WebSocketFrame.self) { frames.append(frame) }
            return frames
        }

        /// The `message.send` frames written since the last call, decoded.
        func sends() throws -> [Send] {
            try written().map { frame in
                #expect(frame.opcode == .text && frame.fin && frame.maskKey != nil, "a client frame must be masked")
                return try Send(frame.data)
            }
        }
    }

    /// A decoded `message.send` frame.
    struct Send {
        var id: String, type: String, conversationId: String, clientMessageId: String, text: String

        init(_ buffer: ByteBuffer) throws {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any])
            let data = try #require(object["data"] as? [String: Any])
            id = try #require(object["id"] as? String)
            type = try #require(object["type"] as? String)
            conversationId = try #require(data["conversationId"] as? String)
            clientMessageId = try #require(data["clientMessageId"] as? String)
            text = try #require(data["text"] as? String)
        }
    }

    static func policy(inFlight: Int = 2, limit: Int? = nil, verify: Bool = false, rate: Double = 0) -> SendPolicy {
        var policy = SendPolicy()
        policy.nonce = "n0nce"
        policy.inFlight = inFlight
        policy.messagesPerSender = limit
        policy.verify = verify
        policy.rate = rate
        return policy
    }

    /// A `message.created` as Parley writes it (keys in `order`), carrying the generator's stamp.
    static func created(seq: Int?, sender: Int, number: Int, sentAt: UInt64 = monotonicNanos(), keysFirst: Bool = false) -> String {
        let seqField = seq.map { #""seq":\#($0),"# } ?? ""
        let message = #"{\#(seqField)"text":"pb|\#(sentAt)|\#(sender)|\#(number)| bench","conversationId":"conv-1"}"#
        return keysFirst
            ? #"{"data":{"message":\#(message)},"type":"message.created"}"#
            : #"{"type":"message.created","data":{"message":\#(message)}}"#
    }

    // MARK: Readiness

    @Test func nothingCountsUntilTheServersHello() throws {
        let harness = try Harness(policy: Self.policy(verify: true))
        try harness.receive(#"{"replyTo":"1","ok":true}"#)
        try harness.receive(Self.created(seq: 1, sender: 7, number: 0))
        #expect(!harness.socket.isReady)
        #expect(harness.state.stats.totalAcked == 0 && harness.state.stats.totalDeliveries == 0 && harness.socket.counts.isEmpty)
        try harness.hello()
        #expect(harness.socket.isReady)
        try harness.socket.ready.futureResult.wait()
    }

    @Test func aSocketClosedBeforeItsHelloFailsItsReadinessAndIsNotCountedClosed() throws {
        let harness = try Harness()
        try harness.channel.close().wait()
        #expect(throws: (any Error).self) { try harness.socket.ready.futureResult.wait() }
        #expect(harness.state.stats.closed == 0)
    }

    @Test func aReadySocketTheServerClosesIsCountedClosed() throws {
        let harness = try Harness()
        try harness.hello()
        try harness.channel.close().wait()
        #expect(harness.state.stats.closed == 1)
    }

    // MARK: Sending

    @Test func sendsAreWellFormedNumberedAndStamped() throws {
        let harness = try Harness(index: 3, policy: Self.policy(inFlight: 3))
        try harness.hello()
        harness.state.startSending()
        let sends = try harness.sends()
        #expect(sends.count == 3)
        #expect(sends.map(\.clientMessageId) == ["n0nce-3-0", "n0nce-3-1", "n0nce-3-2"])
        for (number, send) in sends.enumerated() {
            #expect(send.type == "message.send" && send.conversationId == "conv-1")
            #expect(UInt64(send.id) != nil, "the request id is the send time: \(send.id)")
            #expect(send.text == "pb|\(send.id)|3|\(number)| bench")
        }
        #expect(harness.state.stats.totalSent == 3)
        #expect(harness.state.stats.sent == 0, "outside the measurement window")
    }

    @Test func eachAckOpensTheWindowForOneMoreSendUntilTheLimit() throws {
        let harness = try Harness(policy: Self.policy(inFlight: 2, limit: 3))
        try harness.hello()
        harness.state.startSending()
        let first = try harness.sends()
        #expect(first.count == 2)
        try harness.receive(#"{"replyTo":"\#(first[0].id)","ok":true}"#)
        let second = try harness.sends()
        #expect(second.map(\.clientMessageId) == ["n0nce-3-2"], "one reply, one more send, flushed at once")
        try harness.receive(#"{"ok":true,"replyTo":"\#(first[1].id)"}"#)
        try harness.receive(#"{"replyTo":"\#(second[0].id)","ok":true,"data":{"seq":3}}"#)
        #expect(try harness.sends().isEmpty, "the limit of 3 is reached")
        #expect(harness.socket.acked == 3 && harness.state.stats.totalAcked == 3 && harness.state.stats.totalSent == 3)
        #expect(!harness.socket.canSend)
    }

    @Test func nothingIsSentOnceSendingStops() throws {
        let harness = try Harness(policy: Self.policy(inFlight: 1))
        try harness.hello()
        harness.state.startSending()
        let first = try harness.sends()
        harness.state.stopSending()
        try harness.receive(#"{"replyTo":"\#(first[0].id)","ok":true}"#)
        #expect(try harness.sends().isEmpty)
        #expect(harness.state.stats.totalSent == 1 && harness.state.stats.totalAcked == 1)
    }

    @Test func aReceiverNeverSends() throws {
        let harness = try Harness(isSender: false)
        try harness.hello()
        harness.state.startSending()
        #expect(try harness.written().isEmpty)
        #expect(harness.state.stats.totalSent == 0)
    }

    @Test func aRefusalIsAnErrorNotAnAckAndTheFirstOneIsKept() throws {
        let harness = try Harness(policy: Self.policy(inFlight: 1, limit: 3))
        try harness.hello()
        harness.state.startSending()
        var send = try harness.sends()[0]
        let refusal = #"{"replyTo":"\#(send.id)","ok":false,"error":{"code":"forbidden","message":"not a member"}}"#
        try harness.receive(refusal)
        send = try harness.sends()[0]  // the window reopened
        try harness.receive(#"{"replyTo":"\#(send.id)","ok":false,"error":{"code":"rate_limited"}}"#)
        #expect(harness.state.stats.totalErrors == 2)
        #expect(harness.state.stats.totalAcked == 0 && harness.socket.acked == 0)
        #expect(harness.state.stats.firstError == refusal)
    }

    @Test func onlyTheMeasurementWindowRecordsLatencies() throws {
        let harness = try Harness(policy: Self.policy(inFlight: 2, limit: 2))
        try harness.hello()
        harness.state.startSending()
        _ = try harness.sends()
        // An ack outside the window counts for the whole run only.
        try harness.receive(#"{"replyTo":"\#(monotonicNanos())","ok":true}"#)
        #expect(harness.state.stats.ack.totalCount == 0 && harness.state.stats.acked == 0)
        harness.state.measuring = true
        let sentAt = monotonicNanos() - 5_000_000  // sent 5 ms ago
        try harness.receive(#"{"replyTo":"\#(sentAt)","ok":true}"#)
        #expect(harness.state.stats.acked == 1 && harness.state.stats.totalAcked == 2)
        #expect(harness.state.stats.ack.totalCount == 1)
        #expect(harness.state.stats.ack.max >= 4_990_000, "\(harness.state.stats.ack.max) ns")
        try harness.receive(Self.created(seq: 1, sender: 9, number: 0, sentAt: monotonicNanos() - 7_000_000))
        #expect(harness.state.stats.deliveries == 1 && harness.state.stats.delivery.totalCount == 1)
        #expect(harness.state.stats.delivery.max >= 6_990_000)
    }

    // MARK: Receiving

    @Test func othersMessagesAreDeliveriesAndOwnAreEchoes() throws {
        let harness = try Harness(index: 3, policy: Self.policy(verify: true))
        try harness.hello()
        try harness.receive(Self.created(seq: 1, sender: 7, number: 4))
        try harness.receive(Self.created(seq: 2, sender: 3, number: 0))
        try harness.receive(Self.created(seq: 3, sender: 12, number: 0, keysFirst: true))
        try harness.receive(Self.created(seq: 4, sender: 7, number: 4))  // delivered again
        #expect(harness.state.stats.totalDeliveries == 3 && harness.state.stats.totalEchoes == 1)
        #expect(harness.socket.counts == [UInt64(7) << 32 | 4: 2, UInt64(12) << 32: 1], "echoes are not logged; a repeat is")
    }

    @Test func withoutVerifyNothingIsLogged() throws {
        let harness = try Harness(policy: Self.policy(verify: false))
        try harness.hello()
        try harness.receive(Self.created(seq: 1, sender: 7, number: 4))
        #expect(harness.state.stats.totalDeliveries == 1 && harness.socket.counts.isEmpty)
    }

    @Test func framesThatAreNeitherRepliesNorMessagesCountForNothing() throws {
        let harness = try Harness(policy: Self.policy(verify: true))
        try harness.hello()
        try harness.receive(#"{"type":"typing","data":{"text":"pb|1|7|0| bench"}}"#)
        try harness.receive(#"{"type":"presence","data":{"isOnline":true}}"#)
        try harness.receive(#"{"type":"message.created","data":{"message":{"seq":1,"text":"from another client"}}}"#)
        let stats = harness.state.stats
        #expect(stats.totalDeliveries == 0 && stats.totalEchoes == 0 && stats.totalAcked == 0 && stats.totalErrors == 0)
        #expect(harness.socket.counts.isEmpty && stats.catchUps == 0)
    }

    @Test func seqJumpsAreCatchUpsAndStepsBackAreOutOfOrder() throws {
        let harness = try Harness()
        try harness.hello()
        for seq in [10, 11, 12, 14, 13, 15, 15, 16] {
            try harness.receive(Self.created(seq: seq, sender: 7, number: seq))
        }
        // 14 skips 13 (a catch-up); 13 after 14 is one too, and out of order; 15 follows the
        // highest seen (14); the repeated 15 is a catch-up but not out of order; 16 follows.
        #expect(harness.state.stats.catchUps == 3)
        #expect(harness.state.stats.outOfOrder == 1)
    }

    @Test func framesWithoutASeqLeaveTheSeqChecksAlone() throws {
        let harness = try Harness()
        try harness.hello()
        for number in 0..<5 { try harness.receive(Self.created(seq: nil, sender: 7, number: number)) }
        #expect(harness.state.stats.totalDeliveries == 5 && harness.state.stats.catchUps == 0)
    }

    @Test func aFragmentedFrameCountsOnceWhole() throws {
        let harness = try Harness(policy: Self.policy(verify: true))
        try harness.hello()
        let text = Self.created(seq: 1, sender: 7, number: 2)
        let cut1 = text.index(text.startIndex, offsetBy: 20), cut2 = text.index(text.startIndex, offsetBy: 45)
        try harness.receive(String(text[..<cut1]), fin: false, opcode: .text)
        try harness.receive(String(text[cut1..<cut2]), fin: false, opcode: .continuation)
        #expect(harness.state.stats.totalDeliveries == 0, "nothing until the last fragment")
        try harness.receive(String(text[cut2...]), fin: true, opcode: .continuation)
        #expect(harness.state.stats.totalDeliveries == 1)
        #expect(harness.socket.counts == [UInt64(7) << 32 | 2: 1])
        try harness.receive(Self.created(seq: 2, sender: 7, number: 3))
        #expect(harness.socket.counts.count == 2 && harness.state.stats.catchUps == 0, "the next frame starts afresh")
    }

    // MARK: Control frames

    @Test func aPingIsAnsweredWithAMaskedPongOfTheSamePayload() throws {
        let harness = try Harness(isSender: false)
        try harness.hello()
        try harness.receive("beat-42", opcode: .ping)
        let frames = try harness.written()
        #expect(frames.count == 1)
        #expect(frames.first?.opcode == .pong && frames.first?.maskKey != nil)
        #expect(frames.first.map { String(buffer: $0.data) } == "beat-42")
    }

    @Test func theServersCloseIsEchoedWithItsCodeAndTheChannelCloses() throws {
        let harness = try Harness(isSender: false)
        try harness.hello()
        var payload = ByteBuffer()
        payload.write(webSocketErrorCode: .goingAway)
        payload.writeString("server stopping")
        try harness.channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: payload))
        let frames = try harness.written()
        #expect(frames.count == 1 && frames.first?.opcode == .connectionClose && frames.first?.maskKey != nil)
        var echoed = try #require(frames.first?.data)
        #expect(echoed.readableBytes == 2 && echoed.readWebSocketErrorCode() == .goingAway)
        #expect(!harness.channel.isActive && harness.state.stats.closed == 1)
    }

    @Test func closingSendsOneNormalCloseFrame() throws {
        let harness = try Harness(isSender: false)
        try harness.hello()
        harness.socket.close()
        harness.socket.close()
        let frames = try harness.written()
        #expect(frames.count == 1 && frames.first?.opcode == .connectionClose)
        var data = try #require(frames.first?.data)
        #expect(data.readWebSocketErrorCode() == .normalClosure)
        #expect(!harness.channel.isActive)
    }

    // MARK: Rate mode

    /// Rate mode at `rate`/s, measuring, as if sending had started `nanosecondsAgo`.
    static func sendingAtRate(_ state: LoopState, _ rate: Double, startedNanosecondsAgo: UInt64) {
        state.loopRate = rate
        state.sending = true
        state.measuring = true
        state.rateStart = monotonicNanos() - startedNanosecondsAgo
    }

    @Test func dueSendsBeyondEveryFullWindowAreLateOnlyInTheWindow() throws {
        let first = try Harness(index: 0, policy: Self.policy(inFlight: 2, rate: 1000))
        let second = try Harness(index: 1, state: first.state)
        try first.hello()
        try second.hello()
        let state = first.state
        // 50 ms into the run at 1,000/s: 50 sends are due, but two senders of 2 can take 4.
        Self.sendingAtRate(state, 1000, startedNanosecondsAgo: 50_000_000)
        state.tick()
        let (a, b) = (try first.sends(), try second.sends())
        #expect(a.count == 2 && b.count == 2, "round robin over both senders")
        #expect(a.map(\.clientMessageId) == ["n0nce-0-0", "n0nce-0-1"] && b.map(\.clientMessageId) == ["n0nce-1-0", "n0nce-1-1"])
        #expect(state.stats.late >= 46, "\(state.stats.late)")
        #expect(state.rateSent == 4 + state.stats.late, "late sends are given up, not owed later")
        let lateBefore = state.stats.late
        state.measuring = false
        state.rateStart = monotonicNanos() - 100_000_000
        state.rateSent = 0
        state.tick()
        #expect(state.stats.late == lateBefore, "outside the window nothing is counted late")
        #expect(state.stats.totalSent == 4)
        state.stopSending()
    }

    @Test func aTickSendsOnlyWhatIsDue() throws {
        let harness = try Harness(policy: Self.policy(inFlight: 100, rate: 1))
        try harness.hello()
        let state = harness.state
        // 3.5 s at 1/s: 3 are due (rounded down), and there is room for all of them.
        Self.sendingAtRate(state, 1, startedNanosecondsAgo: 3_500_000_000)
        state.tick()
        #expect(try harness.sends().count == 3)
        #expect(state.stats.late == 0 && state.rateSent == 3)
        state.tick()
        #expect(try harness.sends().isEmpty, "nothing new is due at once")
    }
}
