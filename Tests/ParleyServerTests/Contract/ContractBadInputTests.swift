import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Bad input on every route, from a legitimate member: malformed JSON, wrong types, missing
/// fields, empty and oversized strings, out-of-range numbers, malformed ids. Each gets the
/// contract's error body with the one code the contract gives it, and what every member reads
/// back afterwards (lists, histories, changes, watermarks, reactions, members, invites,
/// uploads) is exactly what it was.
@Suite(.serialized) struct ContractBadInputTests {
    struct Case: CustomStringConvertible {
        var method: String
        var path: String
        var body: Data?
        var code: ErrorCode
        var who: String = "alice"
        var headers: [String: String] = [:]
        var description: String {
            "\(who) \(method) \(path) \(body.map { String(decoding: $0.prefix(90), as: UTF8.self) } ?? "")"
        }
    }

    static func json(_ method: String, _ path: String, _ text: String, _ code: ErrorCode, as who: String = "alice") -> Case {
        Case(method: method, path: path, body: Data(text.utf8), code: code, who: who)
    }

    static func bare(_ method: String, _ path: String, _ code: ErrorCode, as who: String = "alice") -> Case {
        Case(method: method, path: path, body: nil, code: code, who: who)
    }

    /// The ids a table needs beyond the world's.
    struct Extras {
        var deletedMessage: EntityID
        var systemMessage: EntityID
    }

    static func extras(_ world: ContractWorld) async throws -> Extras {
        let doomed = try await world.alice.api.send(.init(clientMessageId: "doomed", text: "to be deleted"), to: world.direct.id)
        _ = try await world.alice.api.deleteMessage(doomed.id, in: world.direct.id)
        let system = try #require(try await world.alice.api.messages(world.group.id).messages.first { $0.type == .system })
        return Extras(deletedMessage: doomed.id, systemMessage: system.id)
    }

    static func cases(_ world: ContractWorld, _ extras: Extras) -> [Case] {
        let c = "conversations/\(world.direct.id)"
        let g = "conversations/\(world.group.id)"
        let mine = world.directMessages[0].id, bobs = world.directMessages[1].id
        let bob = world.bob.id, carol = world.carol.id, alice = world.alice.id
        let ghost = EntityID()
        let long201 = String(repeating: "n", count: 201)
        let manyIds = (0...Limits.maxGroupParticipants).map { _ in "\"\(EntityID())\"" }.joined(separator: ",")
        let manyMessageIds = (0...Limits.maxReadBatch).map { _ in "\"\(EntityID())\"" }.joined(separator: ",")
        let metadata33 = (0..<33).map { "\"k\($0)\":\"v\"" }.joined(separator: ",")
        let upload = "attachments/uploads/\(world.uploadId)"
        return [
            // Creating conversations.
            json("POST", "conversations", "{", .invalidRequest),
            json("POST", "conversations", "null", .invalidRequest),
            json("POST", "conversations", #"{"type":"group"}"#, .invalidRequest),
            json("POST", "conversations", #"{"participantIds":[]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"channel","participantIds":[]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":"\#(bob)"}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":null}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":["not-a-uuid"]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":[42]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":[],"name":""}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":[],"name":" \n\t "}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":[],"name":"\#(long201)"}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":[],"name":"a\u0000b"}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":[],"name":7}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"group","participantIds":[\#(manyIds)]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"direct","participantIds":["\#(bob)"],"name":"named"}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"direct","participantIds":[]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"direct","participantIds":["\#(alice)"]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"direct","participantIds":["\#(bob)","\#(bob)"]}"#, .invalidRequest),
            json("POST", "conversations", #"{"type":"direct","participantIds":["\#(bob)","\#(carol)"]}"#, .invalidRequest),
            // Listing conversations.
            bare("GET", "conversations?limit=0", .invalidRequest),
            bare("GET", "conversations?limit=-5", .invalidRequest),
            bare("GET", "conversations?limit=ten", .invalidRequest),
            bare("GET", "conversations?limit=99999999999999999999", .invalidRequest),
            bare("GET", "conversations?before=garbage", .invalidRequest),
            bare("GET", "conversations?changedSince=garbage", .invalidRequest),
            bare("GET", "conversations?changedSince=s1.-5", .invalidRequest),
            bare("GET", "conversations?changedSince=", .invalidRequest),
            // One conversation.
            bare("GET", "conversations/not-a-uuid", .notFound),
            bare("GET", "conversations/\(ghost)", .notFound),
            json("PATCH", "conversations/not-a-uuid", #"{"name":"x"}"#, .notFound),
            json("PATCH", c, #"{"name":"a direct conversation has no name"}"#, .invalidRequest),
            json("PATCH", g, #"{"name":""}"#, .invalidRequest),
            json("PATCH", g, #"{"name":"   "}"#, .invalidRequest),
            json("PATCH", g, #"{"name":"\#(long201)"}"#, .invalidRequest),
            json("PATCH", g, #"{"name":null}"#, .invalidRequest),
            json("PATCH", g, #"{"name":["x"]}"#, .invalidRequest),
            json("PATCH", g, #"{}"#, .invalidRequest),
            // Participants.
            json("POST", "\(g)/participants", #"{"userIds":[]}"#, .invalidRequest),
            json("POST", "\(g)/participants", #"{"userIds":"\#(carol)"}"#, .invalidRequest),
            json("POST", "\(g)/participants", #"{"userIds":["nope"]}"#, .invalidRequest),
            json("POST", "\(g)/participants", #"{}"#, .invalidRequest),
            json("POST", "\(c)/participants", #"{"userIds":["\#(carol)"]}"#, .invalidRequest),
            bare("DELETE", "\(c)/participants/\(bob)", .invalidRequest),
            bare("DELETE", "\(g)/participants/not-a-uuid", .notFound),
            bare("DELETE", "\(g)/participants/\(carol)", .notFound),
            bare("GET", "\(g)/participants?limit=0", .invalidRequest),
            bare("GET", "\(g)/participants?after=nope", .invalidRequest),
            bare("GET", "\(g)/participants?limit=1.5", .invalidRequest),
            // Sending.
            json("POST", "\(c)/messages", #"{"conversationId":"\#(world.group.id)","clientMessageId":"mm","text":"x"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"conversationId":"nope","clientMessageId":"mm","text":"x"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"\#(String(repeating: "c", count: 129))","text":"x"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"line\nbreak","text":"x"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":42}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"x","replyToId":"nope"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"x","replyToId":"\#(ghost)"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"x","metadata":{\#(metadata33)}}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"x","metadata":{"\#(String(repeating: "k", count: 65))":"v"}}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"x","metadata":{"k":"\#(String(repeating: "v", count: 1025))"}}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"x","metadata":{"":"v"}}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"","type":"location","metadata":{"latitude":"1","longitude":"181"}}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"","type":"location","metadata":{"latitude":"north","longitude":"2"}}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"","type":"location"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"extra","forwardOf":"\#(mine)"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","forwardOf":"\#(extras.deletedMessage)"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","forwardOf":"\#(extras.systemMessage)"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"x","type":"file","attachmentId":"\#(ghost)"}"#, .invalidRequest),
            json("POST", "\(c)/messages", #"{"clientMessageId":"t","text":"","type":"video","attachmentId":"\#(world.attachment.id)"}"#, .invalidRequest),
            // A clientMessageId already used in another conversation.
            json("POST", "\(g)/messages", #"{"clientMessageId":"d1","text":"reused"}"#, .conflict),
            // History and changes.
            bare("GET", "\(c)/messages?limit=9223372036854775808", .invalidRequest),
            bare("GET", "\(c)/messages?after=", .invalidRequest),
            bare("GET", "\(c)/messages?before=1e3", .invalidRequest),
            bare("GET", "\(c)/changes?since=abc", .invalidRequest),
            bare("GET", "\(c)/changes?since=-9223372036854775808", .invalidRequest),
            bare("GET", "\(c)/changes?limit=0", .invalidRequest),
            bare("GET", "conversations/not-a-uuid/changes?since=0", .notFound),
            // Editing, deleting, reacting.
            json("PATCH", "\(c)/messages/\(mine)", #"{"text":""}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/\(mine)", #"{"text":" \n "}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/\(mine)", #"{"text":"\#(String(repeating: "x", count: 5001))"}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/\(mine)", #"{"text":"a\u0000b"}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/\(mine)", #"{"text":null}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/\(mine)", #"{"text":5}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/\(mine)", #"{}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/\(bobs)", #"{"text":"not mine"}"#, .forbidden),
            // (Deleting bob's message is no refusal here: alice is an admin and may moderate;
            // a member's refusal is TrustAndSafetyTests'.)
            json("PATCH", "\(c)/messages/\(extras.deletedMessage)", #"{"text":"revived"}"#, .invalidRequest),
            json("PATCH", "\(g)/messages/\(extras.systemMessage)", #"{"text":"rewritten history"}"#, .invalidRequest),
            bare("DELETE", "\(g)/messages/\(extras.systemMessage)", .invalidRequest),
            json("POST", "\(g)/messages/\(extras.systemMessage)/reactions", #"{"emoji":"👍"}"#, .invalidRequest),
            json("PATCH", "\(c)/messages/not-a-uuid", #"{"text":"x"}"#, .notFound),
            json("PATCH", "\(c)/messages/\(ghost)", #"{"text":"x"}"#, .notFound),
            json("POST", "\(c)/messages/\(bobs)/reactions", #"{"emoji":""}"#, .invalidRequest),
            json("POST", "\(c)/messages/\(bobs)/reactions", #"{"emoji":"a b"}"#, .invalidRequest),
            json("POST", "\(c)/messages/\(bobs)/reactions", #"{"emoji":"123456789"}"#, .invalidRequest),
            json("POST", "\(c)/messages/\(bobs)/reactions", #"{"emoji":"\u200d"}"#, .invalidRequest),
            json("POST", "\(c)/messages/\(bobs)/reactions", #"{"emoji":"x\n"}"#, .invalidRequest),
            json("POST", "\(c)/messages/\(bobs)/reactions", #"{"emoji":5}"#, .invalidRequest),
            json("POST", "\(c)/messages/\(bobs)/reactions", #"{}"#, .invalidRequest),
            json("POST", "\(c)/messages/\(extras.deletedMessage)/reactions", #"{"emoji":"👍"}"#, .invalidRequest),
            bare("DELETE", "\(c)/messages/\(bobs)/reactions/%20", .invalidRequest),
            bare("DELETE", "\(c)/messages/\(bobs)/reactions/\(String(repeating: "x", count: 9))", .invalidRequest),
            bare("GET", "\(c)/messages/not-a-uuid/reads", .notFound),
            bare("GET", "\(c)/messages/\(mine)/reads?limit=0", .invalidRequest),
            bare("GET", "\(c)/messages/\(mine)/reads?after=nope", .invalidRequest),
            // Receipts.
            json("POST", "\(c)/read", #"{}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"upToSeq":null}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"upToSeq":-1}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"upToSeq":"3"}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"upToSeq":1.5}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"upToSeq":9223372036854775808}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"messageIds":[]}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"messageIds":["nope"]}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"messageIds":["\#(ghost)"]}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"messageIds":[\#(manyMessageIds)]}"#, .invalidRequest),
            json("POST", "\(c)/read", #"{"upToSeq":3,"messageIds":["\#(mine)"]}"#, .invalidRequest),
            json("POST", "\(c)/delivered", #"{}"#, .invalidRequest),
            json("POST", "\(c)/delivered", #"{"upToSeq":-1}"#, .invalidRequest),
            json("POST", "\(c)/delivered", #"{"upToSeq":"x"}"#, .invalidRequest),
            json("POST", "conversations/not-a-uuid/read", #"{"upToSeq":1}"#, .notFound),
            // Users and the organization.
            bare("GET", "users?q=\(String(repeating: "q", count: 101))", .invalidRequest),
            bare("GET", "users?limit=0", .invalidRequest),
            json("PATCH", "users/\(bob)", #"{"role":"owner"}"#, .invalidRequest),
            json("PATCH", "users/\(bob)", #"{}"#, .invalidRequest),
            json("PATCH", "users/not-a-uuid", #"{"role":"admin"}"#, .notFound),
            json("PATCH", "users/\(alice)", #"{"role":"member"}"#, .conflict),
            bare("DELETE", "users/\(alice)", .conflict),
            bare("DELETE", "users/not-a-uuid", .notFound),
            json("PATCH", "organization", #"{"allowedEmailDomains":"x.io"}"#, .invalidRequest),
            json("PATCH", "organization", #"{"allowedEmailDomains":["localhost"]}"#, .invalidRequest),
            json("PATCH", "organization", #"{"allowedEmailDomains":["a..io"]}"#, .invalidRequest),
            json("PATCH", "organization", #"{"allowedEmailDomains":[\#((0...50).map { "\"d\($0).io\"" }.joined(separator: ","))]}"#, .invalidRequest),
            json("POST", "organization/invites", #"{"maxUses":0}"#, .invalidRequest),
            json("POST", "organization/invites", #"{"maxUses":1001}"#, .invalidRequest),
            json("POST", "organization/invites", #"{"maxUses":"3"}"#, .invalidRequest),
            json("POST", "organization/invites", #"{"expiresInHours":0}"#, .invalidRequest),
            json("POST", "organization/invites", #"{"expiresInHours":2161}"#, .invalidRequest),
            json("POST", "organization/invites", #"{"expiresInHours":99999999999999999999}"#, .invalidRequest),
            json("POST", "organization/invites", #"{"email":"not an address"}"#, .invalidRequest),
            bare("DELETE", "organization/invites/no-such-code", .notFound),
            // Devices and logout.
            json("POST", "devices", #"{"platform":"android","token":"\#(String(repeating: "ab", count: 16))","environment":"sandbox"}"#, .invalidRequest),
            json("POST", "devices", #"{"platform":"ios","token":"xyz","environment":"sandbox"}"#, .invalidRequest),
            json("POST", "devices", #"{"platform":"ios","token":"\#(String(repeating: "a", count: 31))","environment":"sandbox"}"#, .invalidRequest),
            json("POST", "devices", #"{"platform":"ios","token":"\#(String(repeating: "ab", count: 16))","environment":"dev"}"#, .invalidRequest),
            json("POST", "devices", #"{"platform":"ios","environment":"sandbox"}"#, .invalidRequest),
            bare("DELETE", "devices/zz", .invalidRequest),
            bare("DELETE", "devices/\(String(repeating: "cd", count: 16))", .notFound),
            json("POST", "auth/logout", #"{"deviceToken":"nope"}"#, .invalidRequest),
            // Search.
            bare("GET", "search", .invalidRequest),
            bare("GET", "search?q=%20%20", .invalidRequest),
            bare("GET", "search?q=\(String(repeating: "q", count: 201))", .invalidRequest),
            bare("GET", "search?q=x&conversationId=nope", .invalidRequest),
            bare("GET", "search?q=x&offset=-1", .invalidRequest),
            bare("GET", "search?q=x&offset=10001", .invalidRequest),
            bare("GET", "search?q=x&limit=0", .invalidRequest),
            // Attachments and uploads.
            Case(method: "POST", path: "attachments?name=a.html", body: Data("<b>".utf8), code: .invalidRequest, headers: ["Content-Type": "text/html"]),
            Case(method: "POST", path: "attachments?name=a.png", body: Data("not a png".utf8), code: .invalidRequest, headers: ["Content-Type": "image/png"]),
            Case(method: "POST", path: "attachments?name=a%2Fb.txt", body: Data("x".utf8), code: .invalidRequest, headers: ["Content-Type": "text/plain"]),
            Case(method: "POST", path: "attachments?name=e.txt", body: Data(), code: .invalidRequest, headers: ["Content-Type": "text/plain"]),
            bare("GET", "attachments/not-a-uuid", .notFound),
            json("POST", "attachments/uploads", #"{"name":"a.txt","contentType":"text/plain","size":0}"#, .invalidRequest),
            json("POST", "attachments/uploads", #"{"name":"a.txt","contentType":"text/plain","size":-1}"#, .invalidRequest),
            json("POST", "attachments/uploads", #"{"name":"a.txt","contentType":"text/plain","size":999999999999}"#, .payloadTooLarge),
            json("POST", "attachments/uploads", #"{"name":"a.txt","contentType":"text/x-shellscript","size":3}"#, .invalidRequest),
            json("POST", "attachments/uploads", #"{"name":"","contentType":"text/plain","size":3}"#, .invalidRequest),
            Case(method: "PUT", path: upload, body: Data("67890".utf8), code: .invalidRequest),
            Case(method: "PUT", path: "\(upload)?offset=0", body: Data("67890".utf8), code: .conflict),
            Case(method: "PUT", path: "\(upload)?offset=-1", body: Data("67890".utf8), code: .conflict),
            Case(method: "PUT", path: "\(upload)?offset=5", body: Data("678901".utf8), code: .invalidRequest),
            Case(method: "PUT", path: "\(upload)?offset=x", body: Data("67890".utf8), code: .invalidRequest),
            bare("POST", "\(upload)/complete", .conflict),
            bare("GET", "attachments/uploads/not-a-uuid", .notFound),
            // Signing up into an organization with bad fields (acme is open in tests).
            json("POST", "auth/register", #"{"organization":"acme","email":"new@x.io","password":"short","displayName":"New"}"#, .invalidRequest, as: "nobody"),
            json("POST", "auth/register", #"{"organization":"acme","email":"not-an-email","password":"long enough","displayName":"New"}"#, .invalidRequest, as: "nobody"),
            json("POST", "auth/register", #"{"organization":"acme","email":"new@x.io","password":"long enough","displayName":"  "}"#, .invalidRequest, as: "nobody"),
            json("POST", "auth/register", #"{"organization":"","email":"new@x.io","password":"long enough","displayName":"New"}"#, .invalidRequest, as: "nobody"),
            json("POST", "auth/register", #"{"organization":"acme","email":"alice@x.io","password":"long enough","displayName":"Twin"}"#, .conflict, as: "nobody"),
            json("POST", "auth/register", #"{"organization":"acme","email":"ALICE@X.IO ","password":"long enough","displayName":"Twin"}"#, .conflict, as: "nobody"),
            json("POST", "auth/login", #"{"organization":"acme","email":"alice@x.io"}"#, .invalidRequest, as: "nobody"),
            // Methods a route does not have.
            bare("PUT", "conversations/\(world.direct.id)", .notFound),
            bare("DELETE", "conversations/\(world.direct.id)", .notFound),
            bare("PATCH", "\(c)/messages", .notFound),
            bare("GET", "\(c)/read", .notFound),
        ]
    }

    func token(_ who: String, _ world: ContractWorld) -> String? {
        switch who {
        case "alice": world.alice.token
        case "bob": world.bob.token
        default: nil
        }
    }
}
