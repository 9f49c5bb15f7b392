import Foundation
import ParleyProtocol

/// The push decisions an app shell makes, in plain Swift so they are tested on Linux: when to
/// ask for permission, whether a notification arriving while the app is open shows a banner,
/// and what the icon's badge says. The shell (ParleyUI's `ParleyChat` on iOS) asks these and
/// performs the answer with `UNUserNotificationCenter`.
public enum PushRules {
    /// The system's notification permission, as `UNAuthorizationStatus` reports it.
    public enum Permission: Sendable, Equatable {
        /// Never asked.
        case notDetermined
        /// The person said no (only Settings can change it).
        case denied
        /// Allowed.
        case authorized
        /// Allowed quietly (to the notification centre only), without asking.
        case provisional
        /// Allowed for a while (App Clips).
        case ephemeral
    }

    /// When to show the system's permission prompt: once, never at the first launch, and only
    /// after the person has shown they care about answers (they sent a message), so the prompt
    /// comes with its reason. A denial is final here; only Settings changes it.
    public static func shouldAskPermission(_ permission: Permission, signedIn: Bool, messagesSent: Int, alreadyAsked: Bool) -> Bool {
        permission == .notDetermined && signedIn && messagesSent > 0 && !alreadyAsked
    }

    /// Whether to register for remote notifications (hand a device token to the SDK): whenever
    /// any permission is granted, on every launch (the token can change).
    public static func shouldRegister(_ permission: Permission) -> Bool {
        switch permission {
        case .authorized, .provisional, .ephemeral: true
        case .notDetermined, .denied: false
        }
    }

    /// How a notification arriving while the app is open is shown.
    public enum Presentation: Sendable, Equatable {
        /// Not at all: its conversation is on screen, where the message appears by itself.
        case none
        /// A banner, a sound and the list.
        case banner
        /// Not a Parley notification: the app's own rules apply.
        case notParley
    }

    /// The presentation of a notification that arrives while the app is open.
    /// - Parameters:
    ///   - route: The notification's ``PushRoute`` (nil for one that is not Parley's).
    ///   - conversationOnScreen: The conversation the person is reading, if any.
    ///   - fromMe: The message is the person's own, from another of their devices.
    public static func foregroundPresentation(of route: PushRoute?, conversationOnScreen: EntityID?, fromMe: Bool = false) -> Presentation {
        guard let route else { return .notParley }
        if route.conversationId == conversationOnScreen || fromMe { return .none }
        return .banner
    }

    /// The icon's badge: unread messages over every conversation, capped as iOS shows it.
    public static func badge(unreadCounts: [Int]) -> Int {
        min(unreadCounts.reduce(0) { $0 + max($1, 0) }, 9_999)
    }
}

/// Where a notification's tap leads, held until the app can go there: a tap may launch the app
/// (a cold start), when nobody is signed in yet; the route is kept and followed once the
/// session is ready, and only once.
public struct PendingRoute: Sendable, Equatable {
    private var route: PushRoute?

    /// Nothing pending.
    public init() {}

    /// A notification was tapped.
    public mutating func tapped(_ route: PushRoute) { self.route = route }

    /// The route to follow now that the app is `ready` (signed in, list loaded); nil when
    /// there is none or the app is not ready. Following it clears it.
    public mutating func take(ready: Bool) -> PushRoute? {
        guard ready, let route else { return nil }
        self.route = nil
        return route
    }

    /// Whether a tap is waiting.
    public var isPending: Bool { route != nil }
}
