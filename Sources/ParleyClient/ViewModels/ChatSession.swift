import Foundation
import Observation
import ParleyProtocol
import NIOConcurrencyHelpers

/// Everything a chat app needs between "signed out" and "chatting", in one observable object:
/// signing in or up, keeping the session (``SessionStore``), one ``ChatClient`` with its own
/// database per user, the list and directory models, a ``ChatModel`` per opened conversation,
/// a renewed token saved, and signing out with the local data wiped.
///
/// SwiftUI's `ParleyChat` is a layout of this object; it runs on Linux too, and is tested there.
@MainActor @Observable
public final class ChatSession {
    /// Where the session is.
    public enum State: Sendable, Equatable {
        /// No user: show the sign-in screen.
        case signedOut
        /// Talking to the server to sign in or up.
        case signingIn
        /// A user is signed in: ``client``, ``list`` and ``directory`` are set.
        case signedIn
    }

    /// The server.
    public let server: URL
    /// Where the session is now; ``State/signedOut`` at first.
    public private(set) var state: State = .signedOut
    /// The signed-in user.
    public internal(set) var user: User?
    /// The signed-in user's client.
    public private(set) var client: ChatClient?
    /// The conversation list.
    public private(set) var list: ConversationListModel?
    /// The organization's people, with presence.
    public private(set) var directory: DirectoryModel?
    /// Why the last sign-in, sign-up or sign-out failed ("Wrong email or password"), for the form.
    public internal(set) var error: String?
    /// The people, by id (names and presence for rows and subtitles).
    public var users: [EntityID: User] {
        Dictionary((directory?.users ?? []).map { ($0.id, $0) }, uniquingKeysWith: { $1 })
    }
    /// Display names (also for models made before the directory arrived).
    public let names = NameBook()
    /// The conversation open on screen (a split view's selection); a tapped notification
    /// sets it (``open(_:)``).
    public var selection: EntityID?
    /// The app icon's badge: unread messages over every conversation (``PushRules/badge(unreadCounts:)``).
    public private(set) var badge = 0
    /// Why the last change of the user's name or picture failed, for the profile screen.
    public internal(set) var profileError: String?

    @ObservationIgnored private var pendingRoute = PendingRoute()
    @ObservationIgnored private var pushToken: (token: Data, environment: PushEnvironment)?

    @ObservationIgnored private let store: any SessionStore
    @ObservationIgnored private let hooks: MessageHooks
    @ObservationIgnored private let databaseDirectory: String?
    @ObservationIgnored private var observation: Task<Void, Never>?
    @ObservationIgnored private var session: AuthResponse?

    /// A session with a server. `databaseDirectory` holds one database file per user (nil: in
    /// memory, for previews and tests). `hooks` are the app's own checks and preparations of
    /// what is sent (``MessageHooks``): its prechecks run first, its preparations before the
    /// SDK's picture downscaling and upload; its `service`, if any, is what every chat screen
    /// acts through.
    public init(server: URL, store: any SessionStore, databaseDirectory: String?, hooks: MessageHooks = MessageHooks()) {
        self.server = server
        self.store = store
        self.databaseDirectory = databaseDirectory
        self.hooks = hooks
    }

    /// Signs in with the stored session, if there is one (on launch). Offline it starts from
    /// the cache; the client connects when it can.
    public func resume() async {
        guard state == .signedOut, let stored = try? store.load() else { return }
        await begin(stored)
    }

    /// Starts with a user the app signed in itself.
    public func start(with session: AuthResponse) async {
        await end()
        await begin(session)
    }

    /// Signs in with an organization, an email and a password.
    public func signIn(organization: String, email: String, password: String) async {
        await authenticate { try await ParleyAPI(baseURL: self.server).login(
            LoginRequest(organization: organization, email: email, password: password)) }
    }

    /// Creates an account (a new organization, or joining one with an invite code) and signs in.
    public func register(organization: String, email: String, password: String, displayName: String, inviteCode: String? = nil) async {
        await authenticate { try await ParleyAPI(baseURL: self.server).register(RegisterRequest(
            organization: organization, email: email, password: password, displayName: displayName,
            inviteCode: inviteCode.flatMap { $0.isEmpty ? nil : $0 })) }
    }

    private func authenticate(_ call: @escaping () async throws -> AuthResponse) async {
        guard state != .signingIn else { return }
        state = .signingIn
        error = nil
        do {
            let session = try await call()
            state = .signedOut
            await begin(session)
        } catch {
            self.error = Self.describe(error)
            state = .signedOut
        }
    }

    /// Signs out: the server stops pushing to this device, the local database is deleted and
    /// the stored session forgotten. When the server cannot be told, nothing is dropped and
    /// ``error`` says why (try again, or ``forget()`` to drop the device's data anyway).
    public func signOut() async {
        guard let client else { return }
        do {
            try await client.logout()
            await forget()
        } catch {
            self.error = Self.describe(error)
        }
    }

    /// Drops the session and this device's copy of the user's data without asking the server.
    public func forget() async {
        let path = databasePath(for: user?.id)
        await client?.media.purge()
        await end()
        try? store.save(nil)
        if let path {
            for suffix in ["", "-wal", "-shm", "-media", "-outbox"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
    }

    /// A chat screen's model for a conversation, with names from the directory.
    public func chat(_ conversationId: EntityID) -> ChatModel? {
        guard let client else { return nil }
        let names = self.names
        return ChatModel(client: client, conversationId: conversationId, names: { names.name($0) }, service: hooks.service?(client))
    }

    /// Starts a direct conversation with someone (or opens the existing one) and returns its id.
    public func directConversation(with userId: EntityID) async -> EntityID? {
        await startConversation(CreateConversationRequest(type: .direct, participantIds: [userId]))
    }

    /// Starts a group with these people (the user too) under `name`, and returns its id; nil
    /// (with ``error``) when the server refuses (no name, nobody else).
    public func groupConversation(named name: String, with userIds: [EntityID]) async -> EntityID? {
        await startConversation(CreateConversationRequest(type: .group, participantIds: userIds, name: name))
    }

    /// The REST API as the signed-in user (nil when signed out).
    func restAPI() -> ParleyAPI? {
        session.map { ParleyAPI(baseURL: server, token: $0.token) }
    }

    private func startConversation(_ request: CreateConversationRequest) async -> EntityID? {
        guard let api = restAPI() else { return nil }
        do {
            let conversation = try await api.createConversation(request)
            if let client { await client.synchronize() }
            error = nil
            return conversation.id
        } catch {
            self.error = Self.describe(error)
            return nil
        }
    }

    /// An attachment's bytes (an image cell's picture), through the signed-in client's media
    /// cache: downloaded once with the current token, then from memory or disk. Nil when
    /// signed out or when the server refuses.
    public func attachmentData(_ attachment: Attachment) async -> Data? {
        guard let client else { return nil }
        return try? await client.media.data(for: attachment)
    }

    // MARK: Push and app lifecycle (the app shell's inputs)

    /// A notification was tapped: its conversation opens (synced first, so the announced
    /// message is there). Before anyone is signed in (the tap launched the app) the route
    /// waits and opens once the session is ready.
    public func open(_ route: PushRoute) async {
        pendingRoute.tapped(route)
        await followPendingRoute()
    }

    /// How to show a notification that arrives while the app is open: nothing for the
    /// conversation on screen or for the person's own message, a banner otherwise.
    public func presentation(ofNotification userInfo: [AnyHashable: Any]) async -> PushRules.Presentation {
        let route = PushRoute(userInfo: userInfo)
        let onScreen = await client?.focusedConversation
        let fromMe = (userInfo["senderId"] as? String).flatMap(EntityID.init) == user?.id && user != nil
        return PushRules.foregroundPresentation(of: route, conversationOnScreen: onScreen, fromMe: fromMe)
    }

    /// Hands the device's APNs token to the SDK (from the app delegate's
    /// `didRegisterForRemoteNotificationsWithDeviceToken`); kept for a user who signs in later.
    public func setPushToken(_ token: Data, environment: PushEnvironment) async {
        pushToken = (token, environment)
        await client?.setPushToken(token, environment: environment)
    }

    /// Whether to show the notification permission prompt now (``PushRules/shouldAskPermission(_:signedIn:messagesSent:alreadyAsked:)``).
    public func shouldAskForNotifications(_ permission: PushRules.Permission, alreadyAsked: Bool) async -> Bool {
        let sent = await client?.messagesSentThisLaunch ?? 0
        return PushRules.shouldAskPermission(permission, signedIn: state == .signedIn, messagesSent: sent, alreadyAsked: alreadyAsked)
    }

    /// The app left the screen (``ChatClient/appEnteredBackground()``).
    public func appEnteredBackground() async { await client?.appEnteredBackground() }

    /// The app is on screen again (``ChatClient/appEnteredForeground()``).
    public func appEnteredForeground() async { await client?.appEnteredForeground() }

    /// The network path changed (``ChatClient/networkChanged(available:interfaceChanged:)``).
    public func networkChanged(available: Bool, interfaceChanged: Bool) async {
        await client?.networkChanged(available: available, interfaceChanged: interfaceChanged)
    }

    private func followPendingRoute() async {
        guard let client, let route = pendingRoute.take(ready: state == .signedIn) else { return }
        do {
            _ = try await client.open(route)
            selection = route.conversationId
        } catch {
            self.error = Self.describe(error)
        }
    }

    private func refreshBadge() async {
        guard let client else { return }
        if let counts = try? await client.unreadCounts() { badge = PushRules.badge(unreadCounts: counts) }
    }

    /// The database file of a user, in ``databaseDirectory``.
    func databasePath(for userId: EntityID?) -> String? {
        guard let databaseDirectory, let userId else { return nil }
        return (databaseDirectory as NSString).appendingPathComponent("parley-\(userId).sqlite")
    }

    private func begin(_ session: AuthResponse) async {
        do {
            if let databaseDirectory {
                #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
                // Readable after the first unlock: a background sync, upload or push extension
                // may open the database while the phone is locked.
                try FileManager.default.createDirectory(
                    atPath: databaseDirectory, withIntermediateDirectories: true,
                    attributes: [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication])
                #else
                try FileManager.default.createDirectory(atPath: databaseDirectory, withIntermediateDirectories: true)
                #endif
            }
            try? store.save(session)
            let credentials = SessionCredentials(SessionTokens(session), storage: SessionStoreCredentials(store: store))
            let transport = LiveTransport(serverURL: server, credentials: credentials)
            let path = databasePath(for: session.user.id)
            // Files picked in the chat are uploaded by the outbox before their message goes,
            // pictures downscaled first (on Apple platforms).
            let client = ChatClient(
                transport: transport, database: try path.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory(),
                userId: session.user.id,
                hooks: MessageHooks(
                    prechecks: hooks.prechecks, preparations: hooks.preparations + [ImageDownscaling(), AttachmentUpload(api: transport.api)]),
                mediaDirectory: path.map { URL(fileURLWithPath: $0 + "-media", isDirectory: true) },
                outboxFilesDirectory: path.map { URL(fileURLWithPath: $0 + "-outbox", isDirectory: true) })
            self.session = session
            self.client = client
            user = session.user
            names.learn([session.user])
            let names = self.names
            let list = ConversationListModel(client: client)
            let directory = DirectoryModel(client: client)
            self.list = list
            self.directory = directory
            state = .signedIn
            error = nil
            follow(client)
            await client.start()
            if let pushToken { await client.setPushToken(pushToken.token, environment: pushToken.environment) }
            await directory.start()
            names.learn(directory.users)
            await list.start()
            await refreshBadge()
            // A notification tapped before anyone was signed in (a cold start) opens now.
            await followPendingRoute()
        } catch {
            self.error = Self.describe(error)
        }
    }

    private func follow(_ client: ChatClient) {
        observation = Task { [weak self] in
            for await change in await client.changes() {
                guard let self else { return }
                switch change {
                case .tokenRenewed(let tokens):
                    // Saved already (``SessionStoreCredentials``), before the tokens were used.
                    if var session = self.session {
                        session.token = tokens.token
                        session.refreshToken = tokens.refreshToken
                        session.expiresAt = tokens.expiresAt
                        self.session = session
                    }
                case .signInRequired:
                    // The token was refused: sign in again; the outbox waits on this device.
                    self.error = ParleyStrings.text("error.signedOut")
                    await self.end()
                    try? self.store.save(nil)
                case .directory:
                    if let directory = self.directory { self.names.learn(directory.users) }
                    // The user's own name or picture changed on another device (one row read:
                    // this runs on every presence change too).
                    if let me = self.user, let mine = try? await client.database.user(me.id) {
                        self.user?.displayName = mine.displayName
                        self.user?.avatarUrl = mine.avatarUrl
                        self.names.learn([mine])
                    }
                case .conversations:
                    await self.refreshBadge()
                default: break
                }
            }
        }
    }

    private func end() async {
        observation?.cancel()
        observation = nil
        list?.stop()
        directory?.stop()
        await client?.stop()
        list = nil
        directory = nil
        client = nil
        selection = nil
        badge = 0
        user = nil
        session = nil
        state = .signedOut
    }

    /// A sentence for a form, in the device's language: a refused sign-in says so; anything
    /// else is ``ClientError/readable(_:locale:)``.
    static func describe(_ error: any Error, locale: Locale = ParleyStrings.locale) -> String {
        ClientError.readableSignIn(error, locale: locale)
    }
}
