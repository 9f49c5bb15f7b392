import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import UnixSignals

/// On shutdown, closes every WebSocket with "going away" so clients reconnect and catch up.
struct ConnectionCloser: Service {
    let fanOut: FanOut

    func run() async throws {
        try? await gracefulShutdown()
        fanOut.closeAll()
        // No task serves a WebSocket, so the HTTP server's shutdown does not wait for them.
        // Wait here until every session has ended (the client answered, or was cut off after
        // the close grace), so what ends a session (the user offline, here and on the other
        // nodes through the cluster link, which stops after this) happens before the store and
        // the link go.
        let deadline = ContinuousClock.now + .seconds(Int64(LiveConnection.closeGrace.nanoseconds / 1_000_000_000) + 2)
        while fanOut.openSessions.load(ordering: .relaxed) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// Ends the WebSockets whose token would be refused now, whether or not their client sends
/// anything: once a second it reads the signing keys again when they are stale (so a key
/// retired on any node, or in the database, is seen within seconds), and the sessions ended by
/// logout on other nodes, and closes, with 4001, every connection whose token expired, whose
/// key was retired, whose session was ended or whose account was deactivated.
/// Each command is also checked as it arrives (``Gateway``); this covers the silent ones.
struct SessionSweeper: Service {
    let authenticator: Authenticator
    let fanOut: FanOut
    static let period: Duration = .seconds(1)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.period)
                sweep(now: Date())
            }
        }
    }

    /// One pass: returns how many connections it closed.
    @discardableResult
    func sweep(now: Date) -> Int {
        authenticator.tokens.refreshIfStale()
        authenticator.revocations.refreshIfStale(now: now)
        return fanOut.closeEndedSessions(code: Gateway.sessionEndedCloseCode) { authenticator.endOfSession($0, now: now) }
    }
}
