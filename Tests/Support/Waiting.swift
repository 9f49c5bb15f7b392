import Foundation
import ParleyClient

/// Polls a condition (the effect of work in the background: a server, a client, a process)
/// until it holds, every 5 ms, and throws a timeout naming `what` when it has not held within
/// `timeout`. A test that can drive the work's clock itself should do that instead.
public func waitFor(
    _ what: String, timeout: Duration = .seconds(30), _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    throw ClientError(kind: .timeout, message: "Timed out waiting for \(what)")
}
