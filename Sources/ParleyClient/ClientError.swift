import Foundation
import ParleyProtocol

/// The SDK's one error type: what went wrong, whether the server said it, and whether to retry.
public struct ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: Sendable, Equatable {
        /// The server answered with an error body; `code` says which.
        case server
        /// The request never got an answer (connection refused, reset, DNS, TLS).
        case transport
        /// No answer in time.
        case timeout
        /// The answer could not be read.
        case decoding
        /// The WebSocket closed before the reply came.
        case disconnected
    }

    /// What kind of failure this is.
    public var kind: Kind
    /// The contract's code when the server sent one.
    public var code: ErrorCode?
    /// The HTTP status, for HTTP answers.
    public var httpStatus: Int?
    /// What went wrong, in words: the server's message for `server` errors.
    public var message: String
    /// Seconds the server asked to wait before trying again (`rate_limited`, `unavailable`).
    public var retryAfter: TimeInterval?

    /// An error of these values.
    public init(kind: Kind, code: ErrorCode? = nil, httpStatus: Int? = nil, message: String, retryAfter: TimeInterval? = nil) {
        self.kind = kind
        self.code = code
        self.httpStatus = httpStatus
        self.message = message
        self.retryAfter = retryAfter
    }

    /// Whether the same request may succeed later: no answer, a timeout, 5xx, storage trouble
    /// (`unavailable`) or rate limiting.
    /// A retried send is safe either way: the server deduplicates by clientMessageId.
    public var isTransient: Bool {
        switch kind {
        case .transport, .timeout, .disconnected: true
        case .decoding: false
        case .server: code == .internal || code == .rateLimited || code == .unavailable
        }
    }

    /// The message, prefixed with the code (`code: message`) when there is one.
    public var description: String {
        if let code { return "\(code.rawValue): \(message)" }
        return message
    }

    static func server(_ info: ErrorInfo, status: Int? = nil) -> ClientError {
        ClientError(kind: .server, code: info.code, httpStatus: status, message: info.message, retryAfter: info.retryAfter.map(TimeInterval.init))
    }
}
