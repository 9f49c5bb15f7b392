#if canImport(SwiftUI)
import Foundation
import ParleyClient
import ParleyProtocol
import SwiftUI
#if os(iOS)
import UIKit
#endif

/// The whole chat in one view: sign-in (or sign-up) when nobody is signed in, then the
/// conversation list and the chats, with the connection banner, typing, receipts and the
/// offline outbox of the SDK. The session is kept in the Keychain and each user's messages
/// (with the outbox of what is not sent yet) in their own database in the app's Application
/// Support folder, which the system never empties.
///
/// It is also the app shell the SDK needs: leaving the screen sends the outbox and closes the
/// connection after a grace period (on iOS inside a background task, so there is time for
/// both), coming back reconnects and catches up, and a network change (none, back, Wi-Fi to
/// cellular) reconnects at once. With ``ParleyAppDelegate`` attached, a tapped notification
/// opens its chat, notifications for the chat on screen stay quiet, and the app icon's badge
/// follows the unread count.
///
/// ```swift
/// WindowGroup { ParleyChat(server: "https://chat.example.com") }
/// ```
public struct ParleyChat: View {
    @State private var session: ChatSession?
    @Environment(\.scenePhase) private var scenePhase
    #if os(iOS)
    @State private var backgroundTime = BackgroundTime()
    #endif
    private let server: URL?
    private let address: String
    private let signedIn: AuthResponse?
    private let keychainAccessGroup: String?
    private let look: Look

    /// What an app changes in the screens: colours and fonts, cells, hooks on what is sent.
    struct Look {
        var theme: ParleyTheme
        var registry: MessageComponentRegistry
        var hooks: MessageHooks
    }

    /// A chat with a server; shows sign-in until someone signs in. An address that is not a
    /// URL shows an error instead of crashing.
    /// - Parameters:
    ///   - keychainAccessGroup: Where the session is kept in the Keychain
    ///     (``KeychainSessionStore/accessGroup``): a group shared with the app's notification
    ///     service extension, or nil for the app's own.
    ///   - theme: The screens' colours and fonts.
    ///   - registry: Which cell each message type gets (an app's own types drawn with
    ///     ``SwiftUI/View/customMessageCell(_:)``).
    ///   - hooks: The app's own checks and preparations of what is sent, and the service the
    ///     chats act through (``ParleyClient/MessageHooks/service``: wrap or replace any action).
    public init(
        server: String, keychainAccessGroup: String? = nil, theme: ParleyTheme = .standard,
        registry: MessageComponentRegistry = MessageComponentRegistry(), hooks: MessageHooks = MessageHooks()
    ) {
        address = server
        self.server = URL(string: server)
        signedIn = nil
        self.keychainAccessGroup = keychainAccessGroup
        look = Look(theme: theme, registry: registry, hooks: hooks)
    }

    /// A chat with a server for a user the app has signed in itself (the other parameters as
    /// the first initializer takes them).
    public init(
        server: URL, session: AuthResponse, keychainAccessGroup: String? = nil, theme: ParleyTheme = .standard,
        registry: MessageComponentRegistry = MessageComponentRegistry(), hooks: MessageHooks = MessageHooks()
    ) {
        address = server.absoluteString
        self.server = server
        signedIn = session
        self.keychainAccessGroup = keychainAccessGroup
        look = Look(theme: theme, registry: registry, hooks: hooks)
    }

    /// A chat with a server; shows sign-in until someone signs in.
    public init(
        server: URL, keychainAccessGroup: String? = nil, theme: ParleyTheme = .standard,
        registry: MessageComponentRegistry = MessageComponentRegistry(), hooks: MessageHooks = MessageHooks()
    ) {
        address = server.absoluteString
        self.server = server
        signedIn = nil
        self.keychainAccessGroup = keychainAccessGroup
        look = Look(theme: theme, registry: registry, hooks: hooks)
    }

    /// The navigation for the session's state.
    public var body: some View {
        Group {
            if let session {
                switch session.state {
                case .signedIn:
                    ChatNavigation(session: session, registry: look.registry)
                case .signedOut, .signingIn:
                    SignInView(session: session)
                }
            } else if server == nil {
                ContentUnavailableView(tr("Can't use this server"), systemImage: "exclamationmark.triangle", description: Text(address))
            } else {
                ProgressView()
            }
        }
        .parleyTheme(look.theme)
        .task {
            guard session == nil, let server else { return }
            // Application Support, not Caches: the database holds the outbox (messages written
            // and not yet sent), and iOS empties Caches when it runs short of space.
            let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            let made = ChatSession(
                server: server, store: KeychainSessionStore(server: server, accessGroup: keychainAccessGroup),
                databaseDirectory: support?.appendingPathComponent("Parley", isDirectory: true).path, hooks: look.hooks)
            session = made
            // The delegate hands over a device token or a tapped notification that came first
            // (a tap that launched the app opens its chat once the user is signed in).
            ParleyAppDelegate.current?.session = made
            if let signedIn {
                await made.start(with: signedIn)
            } else {
                await made.resume()
            }
        }
        .task(id: sessionIdentity) {
            // The network path, for as long as this session is shown.
            guard let session else { return }
            await NetworkPathObserver().follow { available, interfaceChanged in
                await session.networkChanged(available: available, interfaceChanged: interfaceChanged)
            }
        }
        .task(id: session?.user?.id) {
            // The permission prompt waits for the user's first message (``PushRules``).
            guard let session, let client = session.client, let delegate = ParleyAppDelegate.current else { return }
            for await change in await client.changes() {
                guard case .messages = change, await client.messagesSentThisLaunch > 0 else { continue }
                if await delegate.askForNotificationsIfDue() { return }
            }
        }
        .onChange(of: scenePhase) { _, phase in
            sceneChanged(to: phase)
        }
        .onChange(of: session?.badge, initial: true) { _, badge in
            guard let badge else { return }
            SystemNotifications.setBadge(badge)
        }
    }

    /// Which session is shown (one per launch; its lifetime bounds the network observer).
    private var sessionIdentity: ObjectIdentifier? {
        guard let session else { return nil }
        return ObjectIdentifier(session)
    }

    /// Tells the session where the app is: the SDK decides what that means for the connection
    /// (``AppLifecycleMachine``).
    private func sceneChanged(to phase: ScenePhase) {
        guard let session else { return }
        switch phase {
        case .background:
            #if os(iOS)
            // Long enough for the outbox flush and the clean close at the end of the grace
            // period; iOS ends it sooner if it grants less.
            backgroundTime.begin(for: AppLifecycleMachine.Policy().backgroundGrace + .seconds(3))
            #endif
            Task { await session.appEnteredBackground() }
        case .active:
            #if os(iOS)
            backgroundTime.end()
            #endif
            Task { await session.appEnteredForeground() }
        default:
            // `.inactive`: a moment between the two (the app switcher, a call); nothing changes.
            break
        }
    }
}

/// The list and the open chat: a split view where there is room, a stack on a phone. The open
/// chat is the session's ``ChatSession/selection``, so a tapped notification opens it. The chat
/// has a navigation stack of its own, where its threads open. The scene keeps which chat is
/// open, so a relaunch (or iOS bringing back a scene it discarded) opens it again.
struct ChatNavigation: View {
    @Bindable var session: ChatSession
    let registry: MessageComponentRegistry
    /// ``ChatSession/keptSelection``: the user and the open chat, or "".
    @SceneStorage("parley.openChat") private var keptChat = ""

    var body: some View {
        NavigationSplitView {
            ConversationListView(session: session, selection: $session.selection)
        } detail: {
            if let selection = session.selection, let model = session.chat(selection) {
                // A new stack for each chat: an open thread closes with its chat.
                NavigationStack {
                    ChatView(model: model, session: session, registry: registry)
                }
                .id(selection)
            } else {
                ContentUnavailableView(tr("No chat selected"), systemImage: "bubble.left.and.bubble.right")
            }
        }
        .environment(\.parleyPictures, PictureLoader { [session] url in await session.pictureData(url) })
        .onChange(of: session.selection) { _, _ in keptChat = session.keptSelection }
        .task {
            // Shown once signed in: the chat open when the scene was last used comes back.
            if !keptChat.isEmpty { await session.restoreSelection(keptChat) }
        }
    }
}

#if os(iOS)
/// Background time from iOS after the app leaves the screen, so the SDK can send the outbox and
/// close the connection cleanly before the app is suspended: one task at a time, ended after
/// the given time, on coming back, or when iOS says the time is up.
@MainActor
final class BackgroundTime {
    private var identifier = UIBackgroundTaskIdentifier.invalid
    private var timer: Task<Void, Never>?

    /// Asks iOS for background time, ending it after `duration` at the latest.
    func begin(for duration: Duration) {
        end()
        identifier = UIApplication.shared.beginBackgroundTask(withName: "Parley: send and close") { [weak self] in
            // Called on the main thread shortly before the time runs out: end now or be killed.
            self?.end()
        }
        guard identifier != .invalid else { return }
        timer = Task { [weak self] in
            do { try await Task.sleep(for: duration) } catch { return }
            self?.end()
        }
    }

    /// Gives the background time back (the app is on screen again, or the work is done).
    func end() {
        timer?.cancel()
        timer = nil
        guard identifier != .invalid else { return }
        UIApplication.shared.endBackgroundTask(identifier)
        identifier = .invalid
    }
}
#endif

#Preview("Signed out") {
    ParleyChat(server: "http://127.0.0.1:8080")
}
#endif
