import Foundation

/// `POST /auth/login`.
public struct LoginRequest: Codable, Sendable, Equatable {
    /// The organization's name, matched without case.
    public var organization: String
    /// The user's email, matched without case.
    public var email: String
    /// The user's password.
    public var password: String

    /// A login with these credentials.
    public init(organization: String, email: String, password: String) {
        self.organization = organization
        self.email = email
        self.password = password
    }
}

/// `POST /auth/logout`: stops push to this device (`deviceToken`), or to every device of the
/// user when it is absent. Access tokens are stateless: the client forgets its own.
public struct LogoutRequest: Codable, Sendable, Equatable {
    /// The APNs token to unregister; absent for every device of the user.
    public var deviceToken: String?

    /// A logout; no token means every device.
    public init(deviceToken: String? = nil) {
        self.deviceToken = deviceToken
    }
}

/// The answer to register, login and refresh: a short-lived bearer token, the refresh token
/// that renews it, and the user they stand for.
public struct AuthResponse: Codable, Sendable, Equatable {
    /// A bearer token (an HS256 JWT), valid minutes (15 by default): `expiresAt`.
    public var token: String
    /// The user the token stands for.
    public var user: User
    /// Renews the sign-in (`POST /auth/refresh {refreshToken}`) once: each renewal answers a
    /// new one and the old one stops working. A credential: kept where the app keeps secrets.
    /// Absent from older servers, which keep no sign-in sessions, and from a bearer refresh of
    /// a session that has one already.
    public var refreshToken: String?
    /// When `token` expires.
    public var expiresAt: Date?
    /// When `refreshToken` expires if it is not used (each renewal moves it on).
    public var refreshExpiresAt: Date?

    /// An answer with this token and user.
    public init(token: String, user: User, refreshToken: String? = nil, expiresAt: Date? = nil, refreshExpiresAt: Date? = nil) {
        self.token = token
        self.user = user
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.refreshExpiresAt = refreshExpiresAt
    }
}

/// The 202 answer to a registration that joins an organization by its email domain on a server
/// that proves addresses: a link went to `email`; opening it (`POST /auth/verify`) finishes.
public struct VerificationPending: Codable, Sendable, Equatable {
    /// Where the link went.
    public var email: String
    /// When the link stops working.
    public var expiresAt: Date

    /// An answer for this address.
    public init(email: String, expiresAt: Date) {
        self.email = email
        self.expiresAt = expiresAt
    }
}

/// `POST /auth/verify`: the token of the mailed link; answers as a registration does (201).
public struct VerifyEmailRequest: Codable, Sendable, Equatable {
    /// The token from the link (after `#verify=`).
    public var token: String

    /// A verification with this token.
    public init(token: String) { self.token = token }
}

/// `POST /auth/refresh`: with a refresh token, renews that sign-in (no `Authorization` needed);
/// without one, the bearer token is renewed within its session.
public struct RefreshRequest: Codable, Sendable, Equatable {
    /// The refresh token from the last login or renewal.
    public var refreshToken: String?

    /// A renewal with this refresh token (nil: by the bearer token).
    public init(refreshToken: String?) { self.refreshToken = refreshToken }
}

/// One sign-in of the caller (a device, a browser, a terminal), as `GET /auth/sessions` lists it.
public struct SignInSessionInfo: Codable, Sendable, Equatable {
    /// The session id (`sid` in its tokens).
    public var id: String
    /// What signed in (the client's User-Agent, shortened and neutralised), when it said.
    public var label: String?
    /// When the user signed in.
    public var createdAt: Date
    /// When the session last renewed its token.
    public var lastUsedAt: Date
    /// When it ends unless renewed.
    public var expiresAt: Date
    /// Whether the request listing it was made from this session.
    public var current: Bool

    /// A session with these fields.
    public init(id: String, label: String?, createdAt: Date, lastUsedAt: Date, expiresAt: Date, current: Bool) {
        self.id = id
        self.label = label
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.current = current
    }
}

/// `GET /auth/sessions`: the caller's live sign-ins, newest first.
public struct SignInSessionsResponse: Codable, Sendable, Equatable {
    /// The sessions.
    public var sessions: [SignInSessionInfo]

    /// An answer with these sessions.
    public init(sessions: [SignInSessionInfo]) { self.sessions = sessions }
}

/// `POST /auth/ticket`: a one-use ticket for opening the WebSocket as `/ws?ticket=`, so a
/// browser's access token never goes into a URL (which proxies and servers log).
public struct SocketTicket: Codable, Sendable, Equatable {
    /// The ticket: valid for one upgrade within 30 seconds.
    public var ticket: String
    /// When it stops being accepted.
    public var expiresAt: Date

    /// A ticket valid until `expiresAt`.
    public init(ticket: String, expiresAt: Date) {
        self.ticket = ticket
        self.expiresAt = expiresAt
    }
}
