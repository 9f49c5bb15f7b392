import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// The outbox's rules on their own (what is due, what a failure means, one run at a time),
/// then three edge cases, each against a real server: a failed attempt the database will not
/// record is not resent at once, in a loop; `discard` of a message on its way deletes it on the
/// server too; "delete for me" of a message still waiting hides it and stops it.
@Suite struct OutboxRulesTests {
    typealias Gate = RevokeUnsentTests.Gate

    static func entry(_ id: String, due: Date, attempts: Int = 0) -> OutboxEntry {
        OutboxEntry(
            position: 1, request: SendMessageRequest(clientMessageId: id, text: id), conversationId: EntityID(),
            attempts: attempts, nextAttemptAt: due, preparations: [], context: [:])
    }

    // MARK: The rules

    /// Where a send's failure is decided: a refused token waits, a refusal is final, anything
    /// else is retried after the backoff (or when the server asked, if later).
    @Test func whatAFailedSendMeans() {
        let backoff: (Int) -> TimeInterval = { Double(1 << $0) }
        #expect(OutboxSchedule.decide(ClientError(kind: .server, code: .unauthorized, message: "x"), attempts: 0, backoff: backoff) == .waitForSignIn)
        #expect(OutboxSchedule.decide(ClientError(kind: .server, code: .forbidden, message: "not a participant"), attempts: 3, backoff: backoff)
            == .refused(reason: "not a participant"))
        #expect(OutboxSchedule.decide(PreparationFailed("the file to send is gone"), attempts: 0, backoff: backoff)
            == .refused(reason: "the file to send is gone"))
        #expect(OutboxSchedule.decide(ClientError(kind: .transport, message: "reset"), attempts: 2, backoff: backoff) == .retry(after: 4))
        #expect(OutboxSchedule.decide(ClientError(kind: .timeout, message: "t"), attempts: 50, backoff: backoff) == .retry(after: 32), "capped at 2^5")
        #expect(OutboxSchedule.decide(ClientError(kind: .server, code: .rateLimited, message: "slow", retryAfter: 90), attempts: 0, backoff: backoff)
            == .retry(after: 90), "the server's wait when longer")
        #expect(OutboxSchedule.decide(CancellationError(), attempts: 0, backoff: backoff) == .retry(after: 1))
    }

    /// A failed attempt's time in memory holds even when the database still says "due"; an
    /// entry in flight is never due; "retry now" clears the memory; the next wake is the
    /// later of both times.
    @Test func dueTimesInMemoryAndInTheDatabase() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        var schedule = OutboxSchedule()
        let a = Self.entry("a", due: now), b = Self.entry("b", due: now.addingTimeInterval(30))
        #expect(schedule.next(of: [a, b], now: now)?.request.clientMessageId == "a")
        #expect(schedule.next(of: [a, b], now: now, excluding: ["a"]) == nil, "b is not due yet")
        schedule.sending("a")
        #expect(schedule.next(of: [a], now: now) == nil, "in flight")
        schedule.failed("a", retryAt: now.addingTimeInterval(60))
        schedule.sent("a")
        #expect(schedule.next(of: [a], now: now) == nil, "the database write failed, the memory holds")
        #expect(schedule.nextWake(of: [a, b]) == now.addingTimeInterval(30))
        #expect(schedule.nextWake(of: [a]) == now.addingTimeInterval(60))
        #expect(schedule.next(of: [a], now: now.addingTimeInterval(60)) != nil)
        schedule.retryAll()
        #expect(schedule.next(of: [a], now: now) != nil)
        schedule.failed("a", retryAt: now.addingTimeInterval(60))
        schedule.settled("a")
        #expect(schedule.next(of: [a], now: now) != nil, "settled: nothing kept")
    }

    /// Failed writes of failed attempts, in a row, stop the flush at the bound; one that
    /// works resets the count.
    @Test func repeatedLocalWriteFailuresStopTheFlush() {
        var schedule = OutboxSchedule()
        let early = [schedule.recordedFailure(written: false), schedule.recordedFailure(written: false)]
        let reset = schedule.recordedFailure(written: true)
        #expect(early == [true, true] && reset && schedule.localWriteFailures == 0)
        var results: [Bool] = []
        for _ in 0..<OutboxSchedule.maxLocalWriteFailures { results.append(schedule.recordedFailure(written: false)) }
        #expect(results == Array(repeating: true, count: OutboxSchedule.maxLocalWriteFailures - 1) + [false])
    }

    /// One run per key; calls during a run ask for one round more (however many there were);
    /// waiters are handed back when the run ends; keys do not block each other.
    @Test func oneRunAtATime() {
        var flights = SingleFlight<Flight>()
        let one = EntityID(), two = EntityID()
        let first = flights.start(.catchUp(one))
        let others = flights.start(.catchUp(two)) && flights.start(.outbox)
        let during = [flights.start(.catchUp(one)), flights.start(.catchUp(one))]
        let rounds = [flights.another(.catchUp(one)), flights.another(.catchUp(one))]
        let waiters = flights.finish(.catchUp(one))
        let running = flights.isRunning(.catchUp(one))
        let again = flights.start(.catchUp(one))
        #expect(first && others, "other keys run beside it")
        #expect(during == [false, false], "calls during a run do not run it")
        #expect(rounds == [true, false], "they ask for one round more, however many they were")
        #expect(waiters.isEmpty && !running)
        #expect(again, "it runs again after it ended")
    }

    // MARK: The defects, against a server

    /// The database refuses to record a failed attempt (a full disk): the message is not sent
    /// again at once, in a loop, but waits out its backoff in memory, once.
    @Test func aFailedAttemptTheDatabaseWillNotRecordIsNotResentAtOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        var odds = FaultPlan.Odds.none
        odds.failBeforeSend = 1
        let sends = Mutex(0)
        // A file (a pool): its writer keeps `query_only`, which a queue's reads would reset.
        let database = try LocalDatabase.open(path: TestServer.temporaryDirectory() + "-outbox.sqlite")
        let transport = FaultyTransport(
            serverURL: server.baseURL, token: alice.token, plan: FaultPlan(seed: 7, odds: odds),
            beforeSend: { _ in
                // Were the message resent at once, this loop would never end: let the database write
                // again after ten.
                if sends.withLock({ $0 += 1; return $0 }) == 10 { try? await database.refuseWrites(false) }
            })
        let clock = ManualClock()
        let client = ChatClient(
            transport: transport, database: database, userId: alice.id, environment: ClientRecoveryTests.manualEnvironment(clock),
            policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)), pollInterval: .seconds(3600))
        _ = try await database.enqueue(
            SendMessageRequest(clientMessageId: "full-disk", text: "hello"), in: direct.id, senderId: alice.id, now: clock.now(),
            preparations: [], context: [:])
        try await database.refuseWrites(true)
        await #expect(throws: (any Error).self, "the database refuses writes") {
            try await database.outboxAttemptFailed(clientMessageId: "full-disk", retryAt: clock.now().addingTimeInterval(5))
        }
        await client.flushOutbox()
        #expect(sends.withLock { $0 } == 1, "sent once, then it waits: \(sends.withLock { $0 })")
        #expect(try await database.outboxCount() == 1, "still queued")
        await #expect(throws: (any Error).self, "the database still refuses writes") {
            try await database.outboxRetryNow()
        }
        try await database.refuseWrites(false)
        await client.stop()
    }

    /// `discard` while the message is on its way: the send completes (the server stores it),
    /// and the message is then deleted there, not left for everyone to see.
    @Test func aMessageDiscardedWhileOnItsWayIsDeletedOnTheServer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let gate = Gate()
        let transport = FaultyTransport(
            serverURL: server.baseURL, token: alice.token, plan: FaultPlan(seed: 1, odds: .none), beforeSend: { _ in await gate.pass() })
        let client = try RevokeUnsentTests.client(alice, transport: transport)
        let pending = try await client.send(text: "never mind", in: direct.id)
        try await waitFor("the send in flight") { await gate.reached == 1 }
        try await client.discard(clientMessageId: pending.clientMessageId, in: direct.id)
        await gate.release()
        try await waitFor("deleted on the server") {
            try await RevokeUnsentTests.serverCopies(bob, direct.id, pending.clientMessageId).first?.deletedAt != nil
        }
        let shown = try await RevokeUnsentTests.shown(client, direct.id, alice, pending.clientMessageId)
        #expect(shown == nil || shown?.deletedAt != nil, "not shown as sent: \(String(describing: shown))")
        await client.stop()
    }

    /// "Delete for me" of a message still waiting behind another: gone from the screen at once,
    /// never sent; the one ahead of it goes as usual.
    @Test func deleteForMeOfAWaitingMessageHidesAndStopsIt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let gate = Gate()
        let transport = FaultyTransport(
            serverURL: server.baseURL, token: alice.token, plan: FaultPlan(seed: 1, odds: .none), beforeSend: { _ in await gate.pass() })
        let client = try RevokeUnsentTests.client(alice, transport: transport)
        _ = try await client.send(text: "first", in: direct.id)
        try await waitFor("the first in flight") { await gate.reached == 1 }
        let second = try await client.send(text: "second thoughts", in: direct.id)
        try await MessageService(client: client).deleteForMe(second)
        #expect(try await RevokeUnsentTests.shown(client, direct.id, alice, second.clientMessageId) == nil, "hidden at once")
        await gate.release()
        try await waitFor("the first at Bob's") { try await !bob.api.messages(direct.id).messages.isEmpty }
        await client.flushOutbox()
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["first"], "the deleted one never went")
        #expect(try await client.database.outboxCount() == 0)
        #expect(try await RevokeUnsentTests.shown(client, direct.id, alice, second.clientMessageId) == nil)
        await client.stop()
    }
}
