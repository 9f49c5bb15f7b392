import Foundation
@testable import ParleyStorage
import Synchronization
import Testing
@testable import ParleySQLite

/// SQLite runs the async chat rules inside GRDB's synchronous transaction closure: the rule's
/// task runs on the writer's own thread, to completion, and nothing there ever blocks.
@Suite struct InlineExecutorTests {
    /// Stands in for the transaction's primitives: async in signature, synchronous underneath.
    static func primitive(_ n: Int) async throws -> Int { n * 2 }

    static func rule(_ n: Int) async throws -> Int {
        var total = 0
        for i in 0..<n { total += try await primitive(i) }
        async let a = primitive(100)
        async let b = primitive(1_000)
        return total + (try await a) + (try await b)
    }

    @Test func aRuleRunsToItsEndOnTheCallingThreadBeforeRunReturns() throws {
        let caller = pthread_self()
        let threads = Mutex<[pthread_t]>([])
        let result = try InlineAsync.run {
            threads.withLock { $0.append(pthread_self()) }
            let value = try await Self.rule(10)
            threads.withLock { $0.append(pthread_self()) }
            return value
        }
        #expect(result == 90 + 200 + 2_000)
        #expect(threads.withLock { $0.count } == 2)
        #expect(threads.withLock { $0.allSatisfy { pthread_equal($0, caller) != 0 } }, "a job ran on another thread")
    }

    @Test func aRulesErrorComesOutOfRun() {
        struct Refused: Error, Equatable {}
        #expect(throws: Refused.self) {
            _ = try InlineAsync.run { () async throws -> Int in
                _ = try await Self.primitive(1)
                throw Refused()
            }
        }
    }

    /// The writer's thread is GRDB's: a job left for later would touch the `Database` outside its
    /// closure, so a rule that awaits something that resumes later (a continuation another
    /// thread resumes, a sleep) stops the process instead of leaving the thread blocked (or the
    /// database used from elsewhere). A default actor's methods do not count: under the task's
    /// executor preference they run inline too.
    @Test func aRuleThatAwaitsElsewhereStopsRatherThanBlockingTheThread() async {
        await #expect(processExitsWith: .failure) {
            _ = try? InlineAsync.run { () async throws -> Int in
                await withCheckedContinuation { resumed in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { resumed.resume() }
                }
                return 1
            }
        }
    }

    /// Many transactions one after another on one thread: each run's task is its own.
    @Test func runsOneAfterAnotherKeepTheirOwnResults() throws {
        for n in 0..<200 {
            #expect(try InlineAsync.run { try await Self.primitive(n) } == n * 2)
        }
    }
}
