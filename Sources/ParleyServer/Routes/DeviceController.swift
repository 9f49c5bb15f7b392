import Foundation
import Hummingbird
import ParleyProtocol
import ParleyStorage

/// `POST /devices` (idempotent; a token moves to whoever registers it last) and
/// `DELETE /devices/{token}`: where push notifications go.
struct DeviceController: Sendable {
    let store: any ParleyStore
    /// Sign-ins, which logout ends.
    let sessions: SignInSessions
    let now: @Sendable () -> Date

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("devices", use: register)
        group.delete("devices/:token", use: unregister)
        group.post("auth/logout", use: logout)
    }

    /// Ends the caller's sign-in session (the token it called with, every token refreshed from
    /// the same sign-in, and their WebSockets, on every node) and drops the device the app logs
    /// out on, or every device of the user when none is named: a logged-out phone gets no more
    /// notifications for that account. Other sign-ins of the user (other devices) go on.
    @Sendable func logout(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let body = try await request.decodeOptionalJSON(LogoutRequest.self, absent: LogoutRequest())
        if let token = body.deviceToken {
            _ = try await store.unregisterDevice(token: try Self.token(token), userId: identity.userId)
        } else {
            for device in try await store.devices(userId: identity.userId) {
                _ = try await store.unregisterDevice(token: device.token, userId: identity.userId)
            }
        }
        // Last, so a refused body (400) leaves the session as it was.
        if let grant = context.grant, let session = grant.sessionId {
            _ = try await sessions.end(userId: identity.userId, id: session, accessTokensUntil: grant.expiresAt)
        }
        return JSONResponse.noContent()
    }

    @Sendable func register(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(RegisterDeviceRequest.self)
        guard body.platform == "ios" else { throw ChatError.invalid("platform must be \"ios\"") }
        let token = try Self.token(body.token)
        try await store.registerDevice(
            token: token, userId: identity.userId, platform: body.platform, environment: body.environment, now: now())
        return JSONResponse.noContent()
    }

    @Sendable func unregister(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let token = try Self.token(context.parameters.get("token") ?? "")
        guard try await store.unregisterDevice(token: token, userId: identity.userId) else { throw ChatError.notFound("Device") }
        return JSONResponse.noContent()
    }

    /// An APNs device token: hex, 32 to 200 characters, kept lowercase.
    static func token(_ text: String) throws -> String {
        let token = text.lowercased()
        guard (32...200).contains(token.count), token.allSatisfy(\.isHexDigit) else {
            throw ChatError.invalid("token must be 32–200 hex characters")
        }
        return token
    }
}
