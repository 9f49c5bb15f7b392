import Foundation
import ParleyProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The REST half of the contract over URLSession: one async method per route.
///
/// Every method throws ``ClientError``; server errors carry the contract's code.
public struct ParleyAPI: Sendable {
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    public let baseURL: URL
    /// The bearer token, once logged in (unused when ``credentials`` are set).
    public var token: String?
    /// A sign-in's tokens, renewed as they expire (before a request whose token is about to
    /// expire, and once after a 401), shared with every copy of this client.
    public var credentials: SessionCredentials?
    /// Extra certificate authorities trusted for an `https` server (a self-signed test CA).
    public let trust: ServerTrust?
    let session: any HTTPLoader

    /// A client for a server; `token` from an earlier login, if any; `trust` for a server whose
    /// certificate comes from a CA the system does not know.
    public init(baseURL: URL, token: String? = nil, session: URLSession? = nil, trust: ServerTrust? = nil) {
        self.baseURL = baseURL
        self.token = token
        self.trust = trust
        self.session = trust?.makeLoader() ?? SessionLoader(session: session ?? URLSession(configuration: .ephemeral))
    }

    /// A client for a sign-in whose tokens renew themselves (``SessionCredentials``).
    public init(baseURL: URL, credentials: SessionCredentials, session: URLSession? = nil, trust: ServerTrust? = nil) {
        self.init(baseURL: baseURL, token: nil, session: session, trust: trust)
        self.credentials = credentials
    }

    /// The access token requests carry now.
    public var currentToken: String? { credentials?.tokens.token ?? token }

    // MARK: Auth and users

    /// Registers (creating the organization when new) and returns the token and user. A join
    /// by email domain on a server that proves addresses throws instead, with the message to
    /// show (check your email); ``registration(_:)`` tells the two apart.
    public func register(_ body: RegisterRequest) async throws -> AuthResponse {
        switch try await registration(body) {
        case .registered(let auth): return auth
        case .verificationSent(let pending):
            throw ClientError(
                kind: .server, httpStatus: 202,
                message: "Check your email: we sent a link to \(pending.email). Open it within 24 hours to finish joining.")
        }
    }

    /// Registers: signed in at once, or (joining by email domain) a link went to the address,
    /// which ``verifyEmail(token:)`` finishes.
    public func registration(_ body: RegisterRequest) async throws -> RegistrationOutcome {
        let answer: RegisterAnswer = try await request("POST", "auth/register", body: body)
        return answer.outcome
    }

    /// Finishes a join by email domain with the token of the mailed link; signs in (201).
    public func verifyEmail(token: String) async throws -> AuthResponse {
        try await request("POST", "auth/verify", body: VerifyEmailRequest(token: token))
    }

    /// Logs in and returns the token and user.
    public func login(_ body: LoginRequest) async throws -> AuthResponse {
        try await request("POST", "auth/login", body: body)
    }

    /// A fresh token for the current one (renew before it expires); 401 once the user is
    /// deactivated or the token has expired.
    public func refresh() async throws -> AuthResponse { try await request("POST", "auth/refresh") }

    /// Renews a sign-in by its refresh token: new access and refresh tokens (the old refresh
    /// token stops working). 401 once the sign-in has ended or the user is deactivated.
    public func refresh(refreshToken: String) async throws -> AuthResponse {
        try await request("POST", "auth/refresh", body: RefreshRequest(refreshToken: refreshToken))
    }

    /// The caller's live sign-ins (devices, browsers, terminals), newest first.
    public func signInSessions() async throws -> [SignInSessionInfo] {
        let answer: SignInSessionsResponse = try await request("GET", "auth/sessions")
        return answer.sessions
    }

    /// Ends one of the caller's sign-ins (a lost phone).
    public func endSignInSession(_ id: String) async throws {
        let _: NoContent = try await request("DELETE", "auth/sessions/\(id)")
    }

    /// Ends every sign-in of a member (admins): they sign in again with their password.
    public func signOut(userId: EntityID) async throws {
        let _: NoContent = try await request("POST", "users/\(userId)/sign-out")
    }

    /// The caller.
    public func me() async throws -> User { try await request("GET", "users/me") }

    /// Changes the caller's display name or picture (`PATCH /users/me`).
    public func updateProfile(_ change: UpdateProfileRequest) async throws -> User {
        let answer: UserResponse = try await request("PATCH", "users/me", body: change)
        return answer.user
    }

    // MARK: Organization

    /// The caller's organization.
    public func organization() async throws -> Organization {
        let answer: OrganizationResponse = try await request("GET", "organization")
        return answer.organization
    }

    /// Sets the email domains that may join without an invite (admins).
    public func setAllowedEmailDomains(_ domains: [String]) async throws -> Organization {
        let answer: OrganizationResponse = try await request("PATCH", "organization", body: UpdateOrganizationRequest(allowedEmailDomains: domains))
        return answer.organization
    }

    /// Creates an invite (admins); its `code` is what a new member registers with.
    public func createInvite(_ body: CreateInviteRequest = .init()) async throws -> Invite {
        let answer: InviteResponse = try await request("POST", "organization/invites", body: body)
        return answer.invite
    }

    /// The organization's invites (admins).
    public func invites() async throws -> [Invite] {
        let answer: InvitesResponse = try await request("GET", "organization/invites")
        return answer.invites
    }

    /// Withdraws an invite (admins).
    public func deleteInvite(_ code: String) async throws {
        let escaped = code.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_"))) ?? code
        let _: NoContent = try await request("DELETE", "organization/invites/" + escaped)
    }

    /// Makes a member an admin or an admin a member (admins; the last admin stays: 409).
    public func setRole(_ role: UserRole, of userId: EntityID) async throws -> User {
        let answer: UserResponse = try await request("PATCH", "users/\(userId)", body: UpdateUserRequest(role: role))
        return answer.user
    }

    /// Deactivates a user of the organization (admins): their tokens stop working, their
    /// connections close, their messages stay.
    public func deactivate(_ userId: EntityID) async throws {
        let _: NoContent = try await request("DELETE", "users/\(userId)")
    }

    /// The caller's organization, filtered by name or email when `query` is given.
    public func users(matching query: String? = nil) async throws -> [User] {
        let page: UsersResponse = try await request("GET", "users", query: ["q": query])
        return page.users
    }

    // MARK: Conversations

    /// Creates a group or opens the direct conversation (existing or new).
    public func createConversation(_ body: CreateConversationRequest) async throws -> Conversation {
        try await request("POST", "conversations", body: body)
    }

    /// The caller's conversations, newest activity first (every page).
    public func conversations() async throws -> [Conversation] {
        try await allConversations().conversations
    }

    /// One page of the caller's conversations, newest activity first: `before` is the
    /// previous page's `nextBefore`; the answer carries a sync token.
    public func conversationsPage(limit: Int = 200, before: String? = nil) async throws -> ConversationsResponse {
        try await request("GET", "conversations", query: ["limit": String(limit), "before": before])
    }

    /// Every page of the caller's conversations, with the first page's sync token.
    public func allConversations() async throws -> (conversations: [Conversation], syncToken: String?) {
        var page = try await conversationsPage()
        let token = page.syncToken
        var all = page.conversations
        while page.hasMore == true, let next = page.nextBefore {
            page = try await conversationsPage(before: next)
            all += page.conversations
        }
        return (all, token)
    }

    /// The conversations whose view changed since a sync token, and the ones the user left.
    public func conversationChanges(since token: String) async throws -> ConversationChanges {
        try await request("GET", "conversations", query: ["changedSince": token])
    }

    /// One conversation.
    public func conversation(_ id: EntityID) async throws -> Conversation {
        try await request("GET", "conversations/\(id)")
    }

    /// Renames a group.
    public func rename(_ id: EntityID, to name: String) async throws -> Conversation {
        try await request("PATCH", "conversations/\(id)", body: RenameConversationRequest(name: name))
    }

    /// Adds participants to a group.
    public func addParticipants(_ id: EntityID, userIds: [EntityID]) async throws -> Conversation {
        try await request("POST", "conversations/\(id)/participants", body: AddParticipantsRequest(userIds: userIds))
    }

    /// Removes a participant from a group (oneself: leave).
    public func removeParticipant(_ id: EntityID, userId: EntityID) async throws -> Conversation {
        try await request("DELETE", "conversations/\(id)/participants/\(userId)")
    }

    // MARK: Receipts

    /// Marks everything up to `upToSeq` read.
    public func markRead(_ conversationId: EntityID, upToSeq: Int64) async throws -> ReadResponse {
        try await request("POST", "conversations/\(conversationId)/read", body: ReadRequest(upToSeq: upToSeq))
    }

    /// Marks a batch of messages read (the highest seq among them counts).
    public func markRead(_ conversationId: EntityID, messageIds: [EntityID]) async throws -> ReadResponse {
        try await request("POST", "conversations/\(conversationId)/read", body: ReadRequest(messageIds: messageIds))
    }

    /// Marks everything up to `upToSeq` received; returns the caller's watermarks.
    public func markDelivered(_ conversationId: EntityID, upToSeq: Int64) async throws -> Member {
        try await request("POST", "conversations/\(conversationId)/delivered", body: ["upToSeq": upToSeq])
    }

    // MARK: Push

    /// Registers this device's APNs token for the caller (idempotent; a token used by another
    /// account before moves to this one).
    public func registerDevice(token: String, environment: PushEnvironment) async throws {
        let _: NoContent = try await request(
            "POST", "devices", body: RegisterDeviceRequest(platform: "ios", token: token, environment: environment))
    }

    /// Stops push to a token of the caller's.
    public func unregisterDevice(token: String) async throws {
        let _: NoContent = try await request("DELETE", "devices/\(token)")
    }

    /// Logs out on the server: no more notifications to `deviceToken` (or to any of the
    /// caller's devices when nil). The caller then forgets its access token.
    public func logout(deviceToken: String?) async throws {
        let _: NoContent = try await request("POST", "auth/logout", body: LogoutRequest(deviceToken: deviceToken))
    }

    // MARK: Transport

    func request<Answer: Decodable>(
        _ method: String, _ path: String, query: [String: String?] = [:], body: (any Encodable)? = nil
    ) async throws -> Answer {
        var components = URLComponents(
            url: baseURL.appendingPathComponent("api/v1/" + path), resolvingAgainstBaseURL: false)!
        let items = query.compactMap { key, value in value.map { URLQueryItem(name: key, value: $0) } }
        if !items.isEmpty { components.queryItems = items.sorted { $0.name < $1.name } }
        let encoded = try body.map { try WireCoding.makeEncoder().encode($0) }
        let baseURL = self.baseURL
        let (data, response) = try await authorizedExchange(components.url!, method: method, prepare: { request in
            if let encoded {
                request.httpBody = encoded
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
        }) { [session] request in
            do {
                return try await session.data(for: request)
            } catch let error as URLError where error.code == .timedOut {
                throw ClientError(kind: .timeout, message: "No answer from \(baseURL.absoluteString) in time")
            } catch {
                throw ClientError(kind: .transport, message: "Cannot reach \(baseURL.absoluteString): \(error.localizedDescription)")
            }
        }
        return try decode(Answer.self, data: data, response: response)
    }

    /// Sends a request (a 30 s timeout, the bearer token when logged in, then `prepare`) through
    /// `perform`. With ``credentials`` that can renew, an access token about to expire is
    /// renewed first, and a 401 renews once and sends again: a sign-in outlives its minutes-long
    /// access tokens without the caller noticing.
    func authorizedExchange(
        _ url: URL, method: String, prepare: (inout URLRequest) -> Void,
        _ perform: (URLRequest) async throws -> (Data, URLResponse)
    ) async throws -> (Data, URLResponse) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 30
        prepare(&request)
        let bearer = try await credentials?.validToken(using: self) ?? token
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let first = try await perform(request)
        guard let credentials, let bearer, credentials.canRenew,
            (first.1 as? HTTPURLResponse)?.statusCode == 401
        else { return first }
        let renewed = try await credentials.renew(replacing: bearer, using: self)
        guard renewed.token != bearer else { return first }
        request.setValue("Bearer \(renewed.token)", forHTTPHeaderField: "Authorization")
        return try await perform(request)
    }

    func decode<Answer: Decodable>(_ type: Answer.Type, data: Data, response: URLResponse) throws -> Answer {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let decoder = WireCoding.makeDecoder()
        guard (200..<300).contains(status) else {
            let retryAfter = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Retry-After").flatMap(TimeInterval.init)
            if let body = try? decoder.decode(ErrorBody.self, from: data) {
                var error = ClientError.server(body.error, status: status)
                error.retryAfter = error.retryAfter ?? retryAfter
                throw error
            }
            throw ClientError(
                kind: .server, code: ErrorCode(httpStatus: status), httpStatus: status, message: "HTTP \(status)", retryAfter: retryAfter)
        }
        if let none = NoContent() as? Answer { return none }
        do {
            return try decoder.decode(Answer.self, from: data)
        } catch {
            throw ClientError(kind: .decoding, httpStatus: status, message: "Unreadable answer: \(error)")
        }
    }
}

/// What a registration came to.
public enum RegistrationOutcome: Sendable, Equatable {
    /// Signed in.
    case registered(AuthResponse)
    /// A link went to the address (a join by email domain): it finishes the registration.
    case verificationSent(VerificationPending)
}

/// `POST /auth/register`'s 201 or 202 body.
private struct RegisterAnswer: Decodable {
    let outcome: RegistrationOutcome
    init(from decoder: any Decoder) throws {
        if let auth = try? AuthResponse(from: decoder) {
            outcome = .registered(auth)
        } else {
            outcome = .verificationSent(try VerificationPending(from: decoder))
        }
    }
}

/// The answer of routes that answer 204.
struct NoContent: Decodable {
    init() {}
}
