import Foundation
@testable import ParleyClient
import ParleyProtocol
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the REST client reads what comes back, whatever the server (or a proxy in front of it)
/// answers: the contract's error bodies, bare statuses, `Retry-After`, garbage where JSON
/// belongs, and empty bodies. The answers are real `HTTPURLResponse`s given to the client's own
/// reader, so every status and header can be tried without a server that misbehaves.
@Suite struct ParleyAPIAnswerTests {
    let api = ParleyAPI(baseURL: URL(string: "http://127.0.0.1:9")!)
    static let user = User(id: EntityID(), organizationId: EntityID(), email: "ada@x.io", displayName: "Ada Lovelace 🧮")

    func response(_ status: Int, _ headers: [String: String] = [:]) -> URLResponse {
        HTTPURLResponse(url: URL(string: "http://127.0.0.1:9/api/v1/x")!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
    }

    /// The error `decode` throws for this answer (recorded as an issue when it throws none).
    func failure<Answer: Decodable>(
        _ type: Answer.Type, _ body: String, status: Int, headers: [String: String] = [:]
    ) throws -> ClientError {
        do {
            _ = try api.decode(type, data: Data(body.utf8), response: response(status, headers))
        } catch let error as ClientError {
            return error
        }
        Issue.record("status \(status) with \(body) was taken as a success")
        return ClientError(kind: .decoding, message: "none")
    }

    static func errorBody(_ code: String, _ message: String, retryAfter: Int? = nil) -> String {
        let retry = retryAfter.map { #","retryAfter":\#($0)"# } ?? ""
        return #"{"error":{"code":"\#(code)","message":"\#(message)"\#(retry)}}"#
    }

    @Test(arguments: [200, 201, 204, 299])
    func everyTwoHundredStatusIsASuccess(status: Int) throws {
        let body = try WireCoding.makeEncoder().encode(Self.user)
        let decoded = try api.decode(User.self, data: body, response: response(status))
        #expect(decoded == Self.user, "the name's emoji and every field survive")
    }

    /// A redirect or an informational status is not the answer asked for: it must not be read
    /// as one even when its body happens to be valid JSON of the right shape.
    @Test(arguments: [0, 199, 300, 304, 308])
    func statusesOutsideTwoHundredAreErrorsEvenWithAValidBody(status: Int) throws {
        let body = String(decoding: try WireCoding.makeEncoder().encode(Self.user), as: UTF8.self)
        let error = try failure(User.self, body, status: status)
        #expect(error.kind == .server && error.httpStatus == status && error.message == "HTTP \(status)")
    }

    @Test func anAnswerWithoutAnHTTPStatusIsAnError() throws {
        let plain = URLResponse(url: URL(string: "http://127.0.0.1:9/x")!, mimeType: nil, expectedContentLength: 0, textEncodingName: nil)
        #expect(throws: ClientError.self) { _ = try api.decode(User.self, data: Data("{}".utf8), response: plain) }
    }

    @Test func theContractsErrorBodyGivesCodeMessageAndStatus() throws {
        let error = try failure(User.self, Self.errorBody("not_found", "No such conversation"), status: 404)
        #expect(error.kind == .server && error.code == .notFound && error.httpStatus == 404)
        #expect(error.message == "No such conversation" && error.description == "not_found: No such conversation")
        #expect(!error.isTransient, "a missing conversation does not appear by retrying")
        let conflict = try failure(NoContent.self, Self.errorBody("conflict", "The last admin stays"), status: 409)
        #expect(conflict.code == .conflict && !conflict.isTransient)
    }

    /// The body's own `retryAfter` is the server's word; the header is the fallback for
    /// answers that carry only it (a proxy's 503, an error body from an older server).
    @Test func retryAfterComesFromTheBodyElseTheHeader() throws {
        let both = try failure(User.self, Self.errorBody("rate_limited", "Slow down", retryAfter: 7), status: 429, headers: ["Retry-After": "30"])
        #expect(both.code == .rateLimited && both.retryAfter == 7 && both.isTransient)
        let headerOnly = try failure(User.self, Self.errorBody("unavailable", "Disk full"), status: 503, headers: ["Retry-After": "12"])
        #expect(headerOnly.code == .unavailable && headerOnly.retryAfter == 12 && headerOnly.isTransient)
        let bare = try failure(User.self, "<html>Service Unavailable</html>", status: 503, headers: ["Retry-After": "5"])
        #expect(bare.code == .unavailable && bare.retryAfter == 5 && bare.message == "HTTP 503")
        // An HTTP date is allowed by HTTP but not a number of seconds: no made-up wait.
        let dated = try failure(User.self, "", status: 429, headers: ["Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"])
        #expect(dated.code == .rateLimited && dated.retryAfter == nil)
        let none = try failure(User.self, Self.errorBody("internal", "Oops"), status: 500)
        #expect(none.retryAfter == nil && none.isTransient)
    }

    /// A proxy's page, an empty body, or an error code this SDK does not know (a newer server)
    /// still gives the code the status stands for, so retry decisions stay right.
    @Test(arguments: [
        (400, ErrorCode.invalidRequest, false), (401, .unauthorized, false), (403, .forbidden, false), (404, .notFound, false),
        (405, .notFound, false), (409, .conflict, false), (413, .payloadTooLarge, false), (418, .invalidRequest, false),
        (429, .rateLimited, true), (500, .internal, true), (502, .internal, true), (503, .unavailable, true), (504, .internal, true),
    ])
    func bodilessErrorsTakeTheirCodeFromTheStatus(status: Int, code: ErrorCode, transient: Bool) throws {
        for body in ["", "<html><body>Bad Gateway</body></html>", Self.errorBody("teapot_brewing", "a code from the future")] {
            let error = try failure(User.self, body, status: status)
            #expect(error.kind == .server && error.code == code && error.httpStatus == status, "\(status) \(body)")
            #expect(error.isTransient == transient && error.message == "HTTP \(status)")
        }
    }

    /// A success whose body cannot be read is a decoding error (never retried: the same bytes
    /// would come again), with the status kept for the report.
    @Test func anUnreadableSuccessIsADecodingErrorNotAServerOne() throws {
        for body in ["", "not json", "{\"id\":\"nope\"}", "[]", "{\"token\":1}"] {
            let error = try failure(User.self, body, status: 200)
            #expect(error.kind == .decoding && error.httpStatus == 200 && error.code == nil, "\(body)")
            #expect(!error.isTransient)
        }
        // A timestamp the wire format does not allow fails the whole answer, not just the field.
        var json = String(decoding: try WireCoding.makeEncoder().encode(Self.user), as: UTF8.self)
        json = json.replacingOccurrences(of: "}", with: #","lastSeenAt":"yesterday"}"#)
        #expect(try failure(User.self, json, status: 200).kind == .decoding)
    }

    /// Routes that answer 204 carry no body at all; any body they do carry is ignored.
    @Test func noContentRoutesAcceptAnEmptyOrAnyBody() throws {
        _ = try api.decode(NoContent.self, data: Data(), response: response(204))
        _ = try api.decode(NoContent.self, data: Data("garbage".utf8), response: response(200))
        #expect(try failure(NoContent.self, "", status: 401).code == .unauthorized)
    }

    @Test func clientErrorsReadAsSentences() {
        #expect(ClientError(kind: .transport, message: "Cannot reach x").description == "Cannot reach x")
        #expect(ClientError(kind: .server, code: .payloadTooLarge, message: "Too big").description == "payload_too_large: Too big")
        #expect(ClientError(kind: .disconnected, message: "closed").isTransient)
        #expect(!ClientError(kind: .server, code: .unauthorized, message: "").isTransient, "a refused token is renewed, not retried")
        #expect(!ClientError(kind: .server, code: .payloadTooLarge, message: "").isTransient)
        #expect(!ClientError(kind: .server, code: nil, httpStatus: 202, message: "check your email").isTransient)
    }
}
