import Foundation
import ParleyProtocol

/// Where a tapped notification leads: a conversation, and the message that was announced.
public struct PushRoute: Sendable, Equatable {
    /// The conversation to open.
    public var conversationId: EntityID
    /// The announced message, when the notification names one.
    public var messageId: EntityID?

    /// A route to a conversation and, optionally, one of its messages.
    public init(conversationId: EntityID, messageId: EntityID?) {
        self.conversationId = conversationId
        self.messageId = messageId
    }

    /// The route of a Parley notification's `userInfo` (what iOS hands the app); nil for any
    /// other notification.
    public init?(userInfo: [AnyHashable: Any]) {
        guard (userInfo["type"] as? String) == "chat_message",
            let conversation = (userInfo["conversationId"] as? String).flatMap(EntityID.init)
        else { return nil }
        self.init(conversationId: conversation, messageId: (userInfo["messageId"] as? String).flatMap(EntityID.init))
    }

    /// The route of a raw payload (a notification service extension, tests).
    public init?(payload: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any] else { return nil }
        self.init(userInfo: object)
    }
}

extension ChatClient {
    private static let pushTokenKey = "push_token"
    private static let pushRegisteredKey = "push_registered"

    /// Hands the SDK the device's APNs token (call it from
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` on every launch).
    ///
    /// The token is kept in the local database and registered with the server now if it can be,
    /// else after the next successful sync; a new token (iOS may change it) replaces the old one.
    public func setPushToken(_ deviceToken: Data, environment: PushEnvironment) async {
        await setPushToken(hex: deviceToken.map { String(format: "%02x", $0) }.joined(), environment: environment)
    }

    /// ``setPushToken(_:environment:)`` with the token already in hex.
    public func setPushToken(hex token: String, environment: PushEnvironment) async {
        let value = "\(token.lowercased())|\(environment.rawValue)"
        do {
            if try await database.setting(Self.pushTokenKey) != value {
                try await database.setSetting(Self.pushTokenKey, to: value)
            }
            // Registered anew each launch: cheap, idempotent, and heals a token the server dropped.
            try await database.setSetting(Self.pushRegisteredKey, to: nil)
        } catch {
            logger.warning("Could not keep the push token", metadata: ["error": "\(error)"])
        }
        await registerPushTokenIfNeeded()
    }

    /// Whether the current push token is registered with the server for this user.
    public func isPushTokenRegistered() async -> Bool {
        guard let token = try? await database.setting(Self.pushTokenKey) else { return false }
        return (try? await database.setting(Self.pushRegisteredKey)) == "\(userId)|\(token)"
    }

    /// Registers the kept token if this user has not registered it yet (after a login, a token
    /// change, or a registration that failed offline). Called by every sync.
    func registerPushTokenIfNeeded() async {
        guard let stored = try? await database.setting(Self.pushTokenKey) else { return }
        let marker = "\(userId)|\(stored)"
        guard (try? await database.setting(Self.pushRegisteredKey)) != marker else { return }
        let parts = stored.split(separator: "|")
        guard parts.count == 2, let environment = PushEnvironment(rawValue: String(parts[1])) else { return }
        do {
            try await transport.registerDevice(token: String(parts[0]), environment: environment)
            try await database.setSetting(Self.pushRegisteredKey, to: marker)
        } catch {
            logger.debug("Push token not registered yet; will retry after the next sync", metadata: ["error": "\(error)"])
        }
    }

    /// Logs out: the server stops pushing to this device, the connection closes, and (unless
    /// `keepLocalData`) the cache, the outbox and the downloaded media are wiped. Throws when the server cannot be told;
    /// nothing local is dropped then, so the app can try again.
    public func logout(keepLocalData: Bool = false) async throws {
        let stored = try await database.setting(Self.pushTokenKey)
        let token = stored.flatMap { $0.split(separator: "|").first.map(String.init) }
        try await transport.logout(deviceToken: token)
        await stop()
        try await database.setSetting(Self.pushRegisteredKey, to: nil)
        if !keepLocalData {
            try await database.reset(includingOutbox: true)
            await media.purge()
            outboxFiles.purge()
        }
        notify(.conversations)
    }

    /// Opens the conversation a notification points to, syncing it first so the announced
    /// message is on screen: a cached conversation catches up from its synced seq, an unknown
    /// one is fetched. The list and the badge are refreshed behind it.
    public func open(_ route: PushRoute, limit: Int = 50) async throws -> [LocalMessage] {
        if try await database.syncedSeq(route.conversationId) != nil {
            await catchUp(route.conversationId)
        }
        let messages = try await openConversation(route.conversationId, limit: limit)
        Task { await self.synchronize() }
        return messages
    }

    /// The app icon's badge: the total unread count of the cached conversations (call after a
    /// sync, or on every `.conversations` change).
    public func badgeCount() async throws -> Int {
        PushRules.badge(unreadCounts: try await unreadCounts())
    }

    /// Each cached conversation's unread count.
    public func unreadCounts() async throws -> [Int] {
        try await database.conversations().map(\.unreadCount)
    }
}
