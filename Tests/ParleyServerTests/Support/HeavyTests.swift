import Testing

/// Tests that start whole programs (browsers, terminals, `parley serve` nodes, nginx) take both
/// cores for many seconds; run side by side they starved every other test's in-process server
/// until WebSocket connects timed out (10 s). `@Test(.heavy)` runs them one at a time; a test
/// waiting for its turn uses no CPU, and its own timeouts start only when it runs.
struct HeavyTrait: TestTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await HeavyGate.shared.enter()
        do {
            try await function()
        } catch {
            await HeavyGate.shared.leave()
            throw error
        }
        await HeavyGate.shared.leave()
    }
}

extension Trait where Self == HeavyTrait {
    /// One heavy test at a time across the whole run.
    static var heavy: Self { HeavyTrait() }
}

/// A first-come, first-served lock for async code.
actor HeavyGate {
    static let shared = HeavyGate()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
