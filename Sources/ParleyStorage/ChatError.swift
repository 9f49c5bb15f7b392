import ParleyProtocol

/// The one error the chat rules and the stores throw on purpose: a stable code of the wire
/// contract and a message safe to show the caller. It knows nothing of HTTP: the server maps
/// it to a status and a JSON body at its edge, and anything else thrown becomes `internal`
/// there, its details going to the log only.
public struct ChatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code of the wire contract.
    public var code: ErrorCode
    /// A message for people; never names another tenant's data.
    public var message: String
    /// Seconds to wait before trying again (`rate_limited`, `unavailable`).
    public var retryAfter: Int?

    /// An error with a code and a message.
    public init(_ code: ErrorCode, _ message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// The wire form of this error.
    public var info: ErrorInfo { ErrorInfo(code: code, message: message, retryAfter: retryAfter) }

    /// The store cannot write now: 503 with `Retry-After`, nothing stored.
    public static let unavailable = ChatError(
        .unavailable, "The server cannot store anything right now (storage trouble); nothing was stored, try again later",
        retryAfter: unavailableRetryAfter)

    /// Seconds a client waits after storage trouble before trying again.
    public static let unavailableRetryAfter = 5

    /// The code and the message, as `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// Too many requests of one kind: 429 with `Retry-After`, nothing done.
    public static func rateLimited(retryAfter seconds: Int) -> ChatError {
        ChatError(.rateLimited, "Too many requests; try again in \(seconds) s", retryAfter: seconds)
    }

    /// Input the contract does not allow: 400, nothing changed.
    public static func invalid(_ message: String) -> ChatError { ChatError(.invalidRequest, message) }
    /// `what` does not exist, or is not the caller's to see (the two are never told apart).
    public static func notFound(_ what: String) -> ChatError { ChatError(.notFound, "\(what) not found") }
    /// No valid token: 401.
    public static let unauthorized = ChatError(.unauthorized, "Missing, invalid or expired token")
    /// A body over the contract's limit: 413.
    public static let payloadTooLarge = ChatError(
        .payloadTooLarge, "Body larger than \(Limits.maxPayloadBytes) bytes")
}
