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
        // No task serves a WebSocket, so the HTTP server's shutdown does not wait for them:
        // wait here (briefly) until every "going away" is on its socket.
        let deadline = ContinuousClock.now + .seconds(2)
        while !fanOut.allClosesSent, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
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
