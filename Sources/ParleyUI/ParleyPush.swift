#if canImport(SwiftUI)
import Foundation
import ParleyClient
import ParleyProtocol
import UserNotifications
#if os(iOS)
import UIKit
#elseif os(macOS)
import AppKit
#endif

/// The app's side of push notifications: the device token for the SDK, how a notification shows
/// while the app is open, where a tap leads, and when to ask for permission. The decisions are
/// ``PushRules`` and ``ChatSession``'s (plain Swift, tested on Linux); this class only carries
/// them to and from the system.
///
/// Attach it as the app delegate, and `ParleyChat` hands it its session:
///
/// ```swift
/// @main
/// struct ChatApp: App {
///     @UIApplicationDelegateAdaptor(ParleyAppDelegate.self) private var appDelegate  // macOS: @NSApplicationDelegateAdaptor
///     var body: some Scene { WindowGroup { ParleyChat(server: "https://chat.example.com") } }
/// }
/// ```
///
/// At launch it becomes the notification centre's delegate (before launch ends, so a tap that
/// launched the app reaches it) and registers with APNs when the permission allows it. A token
/// or a tap that arrives before the session exists is kept and handed over when ``session`` is
/// set; a tap before sign-in opens its chat once the user is signed in (a cold start).
@MainActor
public final class ParleyAppDelegate: NSObject {
    /// The delegate the app attached (SwiftUI's adaptor keeps it alive), for `ParleyChat` to
    /// hand its session to; nil when the app attached none.
    public private(set) static weak var current: ParleyAppDelegate?

    /// The UserDefaults key that records that the permission prompt was shown (once per install).
    public static let askedForNotificationsKey = "parley.askedForNotifications"

    /// The session push works for. `ParleyChat` sets it; an app with its own screens sets it
    /// after making its ``ChatSession``. A token or a tap that came first is handed over then.
    public var session: ChatSession? {
        didSet { handOver() }
    }

    /// The APNs environment of this build's device token: the sandbox in DEBUG builds,
    /// production otherwise. Set it when the `aps-environment` entitlement says otherwise (a
    /// release build signed with a development profile talks to the sandbox).
    public var pushEnvironment: PushEnvironment = {
        #if DEBUG
        return .sandbox
        #else
        return .production
        #endif
    }()

    /// Why the last registration with APNs failed (no push entitlement, no network); nil after
    /// a token arrived.
    public private(set) var registrationError: (any Error)?

    private var pendingToken: Data?
    private var pendingRoute: PushRoute?
    private var askingForNotifications = false

    /// A delegate; SwiftUI's adaptor makes the app's one at launch.
    public override init() {
        super.init()
        Self.current = self
    }

    /// Registers with APNs when the system's permission allows any notifications
    /// (``PushRules/shouldRegister(_:)``); on every launch, since the token can change.
    public func registerIfAllowed() async {
        guard SystemNotifications.isAvailable else { return }
        let permission = SystemNotifications.permission(await SystemNotifications.authorizationStatus())
        guard PushRules.shouldRegister(permission) else { return }
        #if os(iOS)
        UIApplication.shared.registerForRemoteNotifications()
        #elseif os(macOS)
        NSApplication.shared.registerForRemoteNotifications()
        #endif
    }

    /// Shows the system's permission prompt if ``ChatSession/shouldAskForNotifications(_:alreadyAsked:)``
    /// says it is time (after the user's first message, once per install), then registers
    /// with APNs if allowed. `ParleyChat` calls it when the user sends a message.
    /// - Returns: Whether the question is settled (asked now or before, or already answered in
    ///   Settings), so the caller can stop calling.
    @discardableResult
    public func askForNotificationsIfDue() async -> Bool {
        guard let session, SystemNotifications.isAvailable, !askingForNotifications else { return false }
        askingForNotifications = true
        defer { askingForNotifications = false }
        let defaults = UserDefaults.standard
        let asked = defaults.bool(forKey: Self.askedForNotificationsKey)
        let permission = SystemNotifications.permission(await SystemNotifications.authorizationStatus())
        guard await session.shouldAskForNotifications(permission, alreadyAsked: asked) else {
            // Nothing left to ask once the prompt was shown or the person decided in Settings.
            return asked || permission != .notDetermined
        }
        defaults.set(true, forKey: Self.askedForNotificationsKey)
        _ = await SystemNotifications.requestAuthorization()
        await registerIfAllowed()
        return true
    }

    /// The app finished launching: become the notification centre's delegate before launch
    /// ends (a tap that launched the app is delivered to it then), and register if allowed.
    private func launched() {
        guard SystemNotifications.isAvailable else { return }
        UNUserNotificationCenter.current().delegate = self
        Task { await registerIfAllowed() }
    }

    /// APNs gave the device its token: to the session, or kept until there is one.
    private func received(token: Data) {
        registrationError = nil
        guard let session else {
            pendingToken = token
            return
        }
        let environment = pushEnvironment
        Task { await session.setPushToken(token, environment: environment) }
    }

    /// A notification was tapped: its chat opens, now or once there is a session.
    private func open(_ route: PushRoute) {
        guard let session else {
            pendingRoute = route
            return
        }
        Task { await session.open(route) }
    }

    private func handOver() {
        guard session != nil else { return }
        if let token = pendingToken {
            pendingToken = nil
            received(token: token)
        }
        if let route = pendingRoute {
            pendingRoute = nil
            open(route)
        }
    }

    /// How a notification that arrives while the app is open shows, as the session decides.
    private func presentation(of fields: [String: String]) async -> UNNotificationPresentationOptions {
        guard let session else { return SystemNotifications.options(for: .banner) }
        let userInfo: [AnyHashable: Any] = fields
        return SystemNotifications.options(for: await session.presentation(ofNotification: userInfo))
    }
}

#if os(iOS)
extension ParleyAppDelegate: UIApplicationDelegate {
    /// Becomes the notification centre's delegate and registers with APNs when allowed.
    public func application(
        _ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?
    ) -> Bool {
        launched()
        return true
    }

    /// Hands the device token to the session (``ChatSession/setPushToken(_:environment:)``).
    public func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        received(token: deviceToken)
    }

    /// Keeps the reason in ``registrationError``; the next launch tries again.
    public func application(_ application: UIApplication, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        registrationError = error
    }
}
#elseif os(macOS)
extension ParleyAppDelegate: NSApplicationDelegate {
    /// Becomes the notification centre's delegate (before launch ends, so a click that launched
    /// the app reaches it) and registers with APNs when allowed.
    public func applicationWillFinishLaunching(_ notification: Notification) {
        launched()
    }

    /// Hands the device token to the session (``ChatSession/setPushToken(_:environment:)``).
    public func application(_ application: NSApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        received(token: deviceToken)
    }

    /// Keeps the reason in ``registrationError``; the next launch tries again.
    public func application(_ application: NSApplication, didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        registrationError = error
    }
}
#endif

extension ParleyAppDelegate: UNUserNotificationCenterDelegate {
    // Called on a queue of the system's choosing: nonisolated, the notification is read here
    // (it is not Sendable), and the decision is made on the main actor.

    /// A notification arrived while the app is open: nothing for the chat on screen or the
    /// person's own message, a banner otherwise (``ChatSession/presentation(ofNotification:)``).
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
        withCompletionHandler completionHandler: @escaping @Sendable (UNNotificationPresentationOptions) -> Void
    ) {
        let fields = SystemNotifications.strings(of: notification.request.content.userInfo)
        Task { @MainActor in
            completionHandler(await self.presentation(of: fields))
        }
    }

    /// A notification was tapped: its conversation opens (``ChatSession/open(_:)``), after
    /// sign-in when the tap launched the app.
    public nonisolated func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        // The notification itself, not a custom action or a dismissal.
        let tapped = response.actionIdentifier == UNNotificationDefaultActionIdentifier
        let fields = SystemNotifications.strings(of: response.notification.request.content.userInfo)
        Task { @MainActor in
            if tapped, let route = PushRoute(userInfo: fields) { self.open(route) }
            completionHandler()
        }
    }
}

/// The calls into UserNotifications, made outside any actor: the system runs their completion
/// handlers on its own queues, so closures formed in main-actor code would trap there.
enum SystemNotifications {
    /// Whether the process is an app bundle: `UNUserNotificationCenter.current()` raises an
    /// exception in a bare executable (a command-line build of a SwiftUI app, a test runner).
    static var isAvailable: Bool { Bundle.main.bundleURL.pathExtension == "app" }

    /// The system's notification permission now.
    static func authorizationStatus() async -> UNAuthorizationStatus {
        await withCheckedContinuation { continuation in
            UNUserNotificationCenter.current().getNotificationSettings { settings in
                continuation.resume(returning: settings.authorizationStatus)
            }
        }
    }

    /// Shows the permission prompt for alerts, sounds and the badge; whether it was granted.
    static func requestAuthorization() async -> Bool {
        await withCheckedContinuation { continuation in
            UNUserNotificationCenter.current().requestAuthorization(options: [.alert, .sound, .badge]) { granted, _ in
                continuation.resume(returning: granted)
            }
        }
    }

    /// Sets the app icon's badge (nothing shows without the badge permission).
    static func setBadge(_ count: Int) {
        guard isAvailable else { return }
        UNUserNotificationCenter.current().setBadgeCount(count, withCompletionHandler: nil)
    }

    /// The SDK's name for a permission.
    static func permission(_ status: UNAuthorizationStatus) -> PushRules.Permission {
        switch status {
        case .notDetermined: return .notDetermined
        case .denied: return .denied
        case .authorized: return .authorized
        case .provisional: return .provisional
        #if os(iOS)
        case .ephemeral: return .ephemeral
        #endif
        @unknown default:
            // A status this build does not know: neither prompt nor register.
            return .denied
        }
    }

    /// The system's options for a presentation the session decided.
    static func options(for presentation: PushRules.Presentation) -> UNNotificationPresentationOptions {
        switch presentation {
        case .none: return []
        case .banner, .notParley: return [.banner, .list, .sound]
        }
    }

    /// The top-level string values of a notification's payload: all a Parley notification's
    /// route and presentation read (`type`, `conversationId`, `messageId`, `senderId`), in a
    /// form that can cross to the main actor.
    static func strings(of userInfo: [AnyHashable: Any]) -> [String: String] {
        var fields: [String: String] = [:]
        for (key, value) in userInfo {
            if let key = key as? String, let value = value as? String { fields[key] = value }
        }
        return fields
    }
}
#endif
