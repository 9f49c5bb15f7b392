import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import UnixSignals

extension ParleyApp {
    /// The WebSocket endpoint's session logic (``ParleyHTTPChannel`` hands it upgraded sockets).
    func buildGateway() async throws -> Gateway {
        Gateway(
            authenticator: Authenticator(tokens: tokens, accounts: accounts, revocations: revocations),
            store: store, chat: chat, fanOut: fanOut, signals: signals,
            heartbeatSeconds: configuration.heartbeatSeconds, heartbeats: heartbeats, logger: logger,
            storeId: try await store.storeIdentity(), health: health)
    }

    /// The router with every route of the contract under `/api/v1`.
    func buildRouter() async throws -> Router<ParleyRequestContext> {
        let chat = self.chat, signals = self.signals
        let authenticator = Authenticator(tokens: tokens, accounts: accounts, revocations: revocations)
        let router = Router(context: ParleyRequestContext.self)
        // A span per request, joining a caller's `traceparent` (only while tracing is on).
        if ServerTracing.isEnabled { router.add(middleware: TracingMiddleware()) }
        router.add(middleware: ConnectionCloseMiddleware())
        router.add(middleware: HTTPMetricsMiddleware(metrics: metrics))
        router.add(middleware: ErrorMiddleware(health: health))
        router.add(middleware: ClientAddressMiddleware(trusted: configuration.trustedProxies))
        let api = router.group("api/v1")
        OperationsController(health: health, drain: drain, metrics: metrics, fanOut: fanOut).addRoutes(to: router, api: api)
        let authenticated = api.group().add(middleware: AuthMiddleware(authenticator: authenticator))
        let sessions = SignInSessions(
            store: store, tokens: tokens, revocations: revocations, refreshLifetime: configuration.refreshTokenLifetime, now: configuration.clock.now,
            logger: logger)
        AuthController(
            store: store, tokens: tokens, sessions: sessions, authenticator: authenticator, passwords: passwords, decoyHash: try await passwords.decoyHash(), now: chat.now, clock: configuration.clock.now,
            openOrganizations: configuration.openOrganizations,
            limits: chat.limits, provingDomainJoins: configuration.domainJoins == .proven,
            mailer: configuration.mailer ?? configuration.smtp.map { SMTPMailer(configuration: $0, logger: self.logger) },
            publicURL: configuration.publicURL ?? URL(string: "http://\(configuration.host):\(configuration.port)")!
        ).addRoutes(to: api, authenticated: authenticated)
        // The upgrade itself never reaches the router (``ParleyHTTPChannel`` takes it below
        // HTTP); a plain GET is authenticated like the upgrade and told what the endpoint is.
        api.get("ws") { request, _ -> Response in
            _ = try await authenticator.grant(for: request, allowingQueryToken: true, consumingTicket: false)
            throw ChatError.invalid("This endpoint opens a WebSocket: send the upgrade headers (Upgrade: websocket)")
        }
        UserController(store: store, fanOut: fanOut, chat: chat).addRoutes(to: authenticated)
        let membership = MembershipService(
            store: store, accounts: accounts, fanOut: fanOut, now: chat.now, openOrganizations: configuration.openOrganizations)
        OrganizationController(store: store, membership: membership, sessions: sessions, audit: chat.audit, lifecycle: lifecycle)
            .addRoutes(to: authenticated)
        LifecycleController(store: store, membership: membership, lifecycle: lifecycle, passwords: passwords).addRoutes(to: authenticated)
        SafetyController(store: store, chat: chat, membership: membership).addRoutes(to: authenticated)
        ConversationController(
            store: store, chat: chat,
            syncOverlapMilliseconds: Int64((configuration.listSyncOverlap.timeInterval * 1000).rounded())
        ).addRoutes(to: authenticated)
        MessageController(store: store, chat: chat).addRoutes(to: authenticated)
        ReceiptController(signals: signals).addRoutes(to: authenticated)
        DeviceController(store: store, sessions: sessions, now: chat.now).addRoutes(to: authenticated)
        AttachmentController(
            store: store, blobs: configuration.attachmentBlobs(for: store),
            maxBytes: configuration.maxAttachmentBytes, now: chat.now, limits: chat.limits
        ).addRoutes(to: authenticated)
        if configuration.servesWebClient {
            WebClientFiles(webRoot: configuration.webRoot).addRoutes(to: router)
        }
        return router
    }
}
