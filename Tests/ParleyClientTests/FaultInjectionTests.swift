import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Several SDK clients talk through a transport that drops, duplicates and delays frames, cuts
/// connections and loses answers, and one of them restarts from its database mid-flight. At
/// the end every client holds exactly the server's messages: none missing, none twice, in seq
/// order, no temporary message left, outbox empty.
///
/// Seeds: `PARLEY_FAULT_SEEDS` (count, default 16) from `PARLEY_FAULT_SEED_BASE` (default 1).
/// A failing seed is printed in the failure message; rerun with that base and a count of 1.
@Suite struct FaultInjectionTests {
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        let count = environment["PARLEY_FAULT_SEEDS"].flatMap(Int.init) ?? 16
        let base = environment["PARLEY_FAULT_SEED_BASE"].flatMap(UInt64.init) ?? 1
        return (0..<UInt64(count)).map { base + $0 }
    }

    @Test(arguments: seeds)
    func everyClientConvergesOnTheServersMessages(seed: UInt64) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let organization = "faults-\(seed)"
        let users = [
            try await server.register("a@x.io", organization: organization),
            try await server.register("b@x.io", organization: organization),
            try await server.register("c@x.io", organization: organization),
        ]
        let group = try await users[0].api.createConversation(.init(type: .group, participantIds: [users[1].id, users[2].id], name: "g"))
        let direct = try await users[0].api.createConversation(.init(type: .direct, participantIds: [users[1].id]))
        let conversations = [group.id, direct.id]
        let directory = TestServer.temporaryDirectory()
        let plans = users.indices.map { FaultPlan(seed: seed &* 1000 &+ UInt64($0)) }
        // The clients' time (backoff, heartbeats, polling, retries) moves only with this clock:
        // by the seed's amount each round, and in steps while the outboxes drain.
        let clock = ManualClock()
        func makeClient(_ index: Int) throws -> ChatClient {
            let user = users[index]
            return ChatClient(
                transport: FaultyTransport(serverURL: server.baseURL, token: user.token, plan: plans[index]),
                database: try LocalDatabase.open(path: "\(directory)/client-\(index).sqlite"), userId: user.id,
                environment: AppLifecycleTests.environment(clock), policy: .init(maxAttempts: 10_000, heartbeat: .seconds(5)),
                pollInterval: .seconds(2))
        }
        var clients = try users.indices.map(makeClient)
        for client in clients { await client.start() }
        for (index, client) in clients.enumerated() {
            for id in conversations where index != 2 || id == group.id {
                try await retrying { _ = try await client.openConversation(id) }
            }
        }

        let perClient = 12
        var generator = SeededGenerator(seed: seed)
        // How many faults a run meets depends on the interleaving with the network (a quiet seed
        // on a fast machine can meet only two or three), so a run goes on for extra rounds until
        // it has met enough to test anything, instead of passing without having been tested.
        let enoughFaults = 5
        var rounds = 0
        for round in 0..<(perClient * 4) {
            if round >= perClient, plans.map(\.injected).reduce(0, +) >= enoughFaults { break }
            rounds += 1
            for index in clients.indices {
                let target = index == 2 ? group.id : conversations[Int.random(in: 0...1, using: &generator)]
                try await clients[index].send(text: "c\(index) r\(round)", in: target)
            }
            if round == perClient / 2 {
                // Client 1's app is killed mid-flight and opened again from its database.
                await clients[1].stop()
                clients[1] = try makeClient(1)
                await clients[1].start()
            }
            // A pause: the network works in real time, the clients' timers by the clock (the
            // seed decides both; 0–1.5 s of the clients' time).
            let pause = Int.random(in: 0...30, using: &generator)
            clock.advance(by: Double(pause) / 20)
            try await Task.sleep(for: .milliseconds(pause))
        }

        #expect(plans.map(\.injected).reduce(0, +) >= enoughFaults, "the run must actually inject faults: \(plans.map(\.injected))")
        for plan in plans { plan.calm() }
        let settled = clients
        for client in settled { await client.networkBecameAvailable() }
        let truth = try await withThrowingTaskGroup(of: (EntityID, [Message]).self) { tasks in
            for id in conversations {
                tasks.addTask { (id, try await users[0].api.messages(id, limit: 200).messages) }
            }
            return try await tasks.reduce(into: [EntityID: [Message]]()) { $0[$1.0] = $1.1 }
        }
        let sentTotal = rounds * clients.count
        let stored = truth.values.flatMap { $0 }
        let context = "seed \(seed) (PARLEY_FAULT_SEED_BASE=\(seed) PARLEY_FAULT_SEEDS=1), faults \(plans.map(\.injected))"
        // The server may still be receiving retries; wait until the outboxes are empty first
        // (time passes, so the messages in a backoff become due).
        try await ChatClientTests.waitAdvancing("outboxes empty, \(context)", clock: clock, by: .seconds(1), timeout: .seconds(60)) {
            for client in settled where try await client.database.outboxCount() > 0 {
                await client.flushOutbox()
                return false
            }
            return true
        }
        let final = try await withThrowingTaskGroup(of: (EntityID, [Message]).self) { tasks in
            for id in conversations {
                tasks.addTask { (id, try await users[0].api.messages(id, limit: 200).messages) }
            }
            return try await tasks.reduce(into: [EntityID: [Message]]()) { $0[$1.0] = $1.1 }
        }
        let all = final.values.flatMap { $0 }
        #expect(all.count == sentTotal, "every message stored exactly once; \(context); had \(stored.count) before draining")
        #expect(Set(all.map(\.text)).count == sentTotal, "\(context)")

        for (index, client) in settled.enumerated() {
            let kept = index == 2 ? [group.id] : conversations
            try await waitFor("client \(index) converges, \(context)", timeout: .seconds(60)) {
                await client.synchronize()
                for id in kept {
                    let local = try await client.database.messages(in: id, viewer: users[index].id, limit: 500)
                    let expected = final[id] ?? []
                    guard local.map(\.serverId) == expected.map(\.id) else { return false }
                }
                return true
            }
            for id in kept {
                let local = try await client.database.messages(in: id, viewer: users[index].id, limit: 500)
                let expected = final[id] ?? []
                #expect(local.compactMap(\.seq) == expected.map(\.seq), "client \(index) seq order, \(context)")
                #expect(local.map(\.text) == expected.map(\.text), "client \(index) content, \(context)")
                #expect(local.allSatisfy { $0.isConfirmed }, "no temporary message left, \(context)")
            }
            #expect(try await client.database.outboxCount() == 0, "\(context)")
        }
        for client in settled { await client.stop() }
        print("fault-injection seed \(seed): \(plans.map(\.injected)) faults injected, \(sentTotal) messages, converged")
    }

    /// First opens can hit an injected HTTP fault; a real app would retry too. (At once: a
    /// fault is the plan's roll for each request, not something that passes with time.)
    func retrying(_ body: () async throws -> Void) async throws {
        for attempt in 1...50 {
            do {
                return try await body()
            } catch let error as ClientError where error.isTransient && attempt < 50 {
                continue
            }
        }
    }
}
