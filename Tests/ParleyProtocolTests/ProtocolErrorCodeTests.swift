import Foundation
import ParleyProtocol
import Testing

/// Error codes are the wire contract: clients switch on the strings and statuses, so a renamed
/// case or a changed status breaks every app in the field.
@Suite struct ProtocolErrorCodeTests {
    /// The codes of PROTOCOL.md, each with the status it names, exactly.
    static let contract: [(code: ErrorCode, raw: String, status: Int)] = [
        (.invalidRequest, "invalid_request", 400), (.unauthorized, "unauthorized", 401), (.forbidden, "forbidden", 403),
        (.notFound, "not_found", 404), (.conflict, "conflict", 409), (.payloadTooLarge, "payload_too_large", 413),
        (.rateLimited, "rate_limited", 429), (.unavailable, "unavailable", 503), (.internal, "internal", 500),
    ]

    /// Each code's raw value and status are the documented ones, and no code exists that the
    /// contract does not list (a new one would reach old clients as an unreadable error).
    @Test func everyCodeHasItsDocumentedStringAndStatus() {
        for entry in Self.contract {
            #expect(entry.code.rawValue == entry.raw)
            #expect(entry.code.httpStatus == entry.status, "\(entry.raw)")
            #expect(ErrorCode(rawValue: entry.raw) == entry.code)
        }
        #expect(Set(ErrorCode.allCases.map(\.rawValue)) == Set(Self.contract.map { $0.raw }))
        #expect(ErrorCode.allCases.count == Self.contract.count)
    }

    /// Codes are case-sensitive and exact: `NOT_FOUND` or `notFound` is not a code.
    @Test(arguments: ["NOT_FOUND", "notFound", "not-found", "invalidRequest", " conflict", "", "rateLimited", "Internal"])
    func lookalikeCodesAreNotCodes(raw: String) {
        #expect(ErrorCode(rawValue: raw) == nil)
    }

    /// Statuses that come without a body (a proxy's 502, a 405 from a router, a 422 from some
    /// middleware) map to the code a client acts on: any other 4xx is the caller's mistake,
    /// anything else is the server's; 405 is "no such route" like 404.
    @Test(arguments: [
        (400, ErrorCode.invalidRequest), (401, .unauthorized), (403, .forbidden), (404, .notFound), (405, .notFound),
        (409, .conflict), (413, .payloadTooLarge), (429, .rateLimited), (503, .unavailable), (500, .internal),
        (402, .invalidRequest), (406, .invalidRequest), (408, .invalidRequest), (410, .invalidRequest), (415, .invalidRequest),
        (416, .invalidRequest), (418, .invalidRequest), (422, .invalidRequest), (451, .invalidRequest), (499, .invalidRequest),
        (501, .internal), (502, .internal), (504, .internal), (599, .internal), (200, .internal), (204, .internal),
        (301, .internal), (304, .internal), (0, .internal), (-1, .internal), (600, .internal), (399, .internal),
    ])
    func statusesWithoutABodyMapToACode(status: Int, code: ErrorCode) {
        #expect(ErrorCode(httpStatus: status) == code)
    }

    /// The error body is `{"error":{"code","message"}}` byte for byte, with `retryAfter` only
    /// when set (never `null`).
    @Test func errorBodiesHaveTheDocumentedBytes() throws {
        let encoder = WireCoding.makeEncoder()
        encoder.outputFormatting.insert(.sortedKeys)
        let plain = ErrorBody(error: ErrorInfo(code: .notFound, message: "Conversation not found"))
        #expect(String(decoding: try encoder.encode(plain), as: UTF8.self) == #"{"error":{"code":"not_found","message":"Conversation not found"}}"#)
        let throttled = ErrorBody(error: ErrorInfo(code: .rateLimited, message: "Too many sends", retryAfter: 2))
        #expect(String(decoding: try encoder.encode(throttled), as: UTF8.self)
            == #"{"error":{"code":"rate_limited","message":"Too many sends","retryAfter":2}}"#)
    }

    /// Every code round-trips inside an error body and an error reply, with and without
    /// `retryAfter`, and a message full of quotes and newlines comes back exactly.
    @Test(arguments: ErrorCode.allCases)
    func everyCodeRoundTripsInBodiesAndReplies(code: ErrorCode) throws {
        let encoder = WireCoding.makeEncoder()
        let decoder = WireCoding.makeDecoder()
        for retryAfter in [nil, 0, 5, 86_400] as [Int?] {
            let info = ErrorInfo(code: code, message: "line 1\n\"quoted\" \\ \u{1F}", retryAfter: retryAfter)
            #expect(try decoder.decode(ErrorBody.self, from: encoder.encode(ErrorBody(error: info))) == ErrorBody(error: info))
            let reply = ReplyFrame<EmptyPayload>(replyTo: "c\(code.rawValue)", error: info)
            let data = try encoder.encode(reply)
            #expect(try decoder.decode(ReplyFrame<EmptyPayload>.self, from: data) == reply)
            let object = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(object["ok"] as? Bool == false)
            #expect(object["data"] == nil)
            let error = try #require(object["error"] as? [String: Any])
            #expect(error["code"] as? String == code.rawValue)
            #expect(error["retryAfter"] as? Int == retryAfter)
            #expect(Set(error.keys) == (retryAfter == nil ? ["code", "message"] : ["code", "message", "retryAfter"]))
        }
    }

    /// An error body from another server version with extra fields (`details`, `requestId`)
    /// still decodes to its code and message.
    @Test func errorBodiesWithExtraFieldsDecode() throws {
        let json = #"{"error":{"code":"conflict","message":"clientMessageId used in another conversation","details":{"x":1},"requestId":"r-1"},"trace":"t"}"#
        let body = try WireCoding.makeDecoder().decode(ErrorBody.self, from: Data(json.utf8))
        #expect(body == ErrorBody(error: ErrorInfo(code: .conflict, message: "clientMessageId used in another conversation")))
    }

    /// An error body whose code is unknown or missing does not decode: the caller falls back to
    /// `ErrorCode(httpStatus:)` instead of reading a wrong code.
    @Test(arguments: [
        #"{"error":{"code":"teapot","message":"m"}}"#, #"{"error":{"message":"m"}}"#, #"{"error":{"code":"conflict"}}"#,
        #"{"error":"conflict"}"#, #"{"code":"conflict","message":"m"}"#, #"{"error":{"code":409,"message":"m"}}"#,
    ])
    func malformedErrorBodiesDoNotDecode(json: String) {
        #expect(throws: DecodingError.self) { try WireCoding.makeDecoder().decode(ErrorBody.self, from: Data(json.utf8)) }
    }

    /// ErrorInfo is itself an Error, so the SDK can throw what the server said unchanged.
    @Test func errorInfoIsThrowableAndComparable() {
        let info = ErrorInfo(code: .unavailable, message: "disk full", retryAfter: 5)
        #expect(throws: info) { throw info }
        #expect(info != ErrorInfo(code: .unavailable, message: "disk full"))
        #expect(info != ErrorInfo(code: .unavailable, message: "disk full", retryAfter: 6))
        #expect(info != ErrorInfo(code: .internal, message: "disk full", retryAfter: 5))
    }
}
