import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `GET /api/v1/openapi.json`: it lists exactly the router's routes, every reference in it
/// resolves, and real answers of a live server fit the schemas it gives for them (schemathesis
/// then fuzzes a live server against it in `.ci/run`).
@Suite struct OpenAPITests {
    static func document(_ server: TestServer) async throws -> [String: Any] {
        let (data, response) = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("api/v1/openapi.json"))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("application/json") == true)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func theDocumentListsExactlyTheRoutesTheRouterServes() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let router = try await server.app.buildRouter()
        let served = Set(router.routes.map { "\($0.method.rawValue) \($0.path.description)" })
        let document = try await Self.document(server)
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, item in
            item.keys.filter { $0 != "parameters" }.map { "\($0.uppercased()) \(path)" }
        })
        #expect(served.count >= 45, "\(served.sorted())")
        #expect(served.subtracting(documented).isEmpty, "routes missing from the document: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")
        #expect(document["openapi"] as? String == "3.1.0")
        // Path parameters are declared for every {name} in a path, and only those.
        for (path, item) in paths {
            let inPath = Set(path.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) })
            let declared = Set(((item["parameters"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String })
            #expect(inPath == declared, "\(path): \(declared.sorted())")
        }
    }

    @Test func everyReferenceResolvesAndEveryOperationAnswersSomething() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let document = try await Self.document(server)
        var references: [String] = []
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                if let ref = object["$ref"] as? String { references.append(ref) }
                object.values.forEach(walk)
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(document)
        #expect(references.count > 100)
        let validator = SchemaValidator(document: document)
        for ref in Set(references) {
            #expect(validator.resolve(ref) != nil, "\(ref) does not resolve")
        }
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        for (path, item) in paths {
            for (method, operation) in item where method != "parameters" {
                let responses = (operation as? [String: Any])?["responses"] as? [String: Any] ?? [:]
                #expect(responses.keys.contains { $0.hasPrefix("2") || $0 == "101" }, "\(method) \(path) documents no success")
            }
        }
    }

    /// Real answers, from a conversation's whole life, checked against the document's schemas.
    @Test func realAnswersFitTheirSchemas() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let validator = SchemaValidator(document: try await Self.document(server))
        let (alice, bob, direct) = try await server.directPair()

        func check(_ method: String, _ path: String, json: String? = nil, token: String? = nil, expect status: Int) async throws {
            let answer = json.map { body in { try await server.raw(method, path, token: token ?? alice.token, json: body) } }
                ?? { try await server.raw(method, path, token: token ?? alice.token) }
            let (got, body) = try await answer()
            #expect(got == status, "\(method) \(path): \(got) \(String(decoding: body, as: UTF8.self))")
            let problems = validator.check(body: body, method: method, path: path, status: got)
            #expect(problems.isEmpty, "\(method) \(path) \(got): \(problems)")
        }
        let c = "conversations/\(direct.id)"
        try await check("POST", "\(c)/messages", json: #"{"clientMessageId":"a1","text":"hello"}"#, expect: 201)
        try await check("POST", "\(c)/messages", json: #"{"clientMessageId":"a1","text":"hello"}"#, expect: 200)
        try await check("POST", "\(c)/messages", json: #"{"clientMessageId":"a2","text":"pin","type":"location","metadata":{"latitude":"1.5","longitude":"2"}}"#, expect: 201)
        let page = try await alice.api.messages(direct.id)
        let first = try #require(page.messages.first)
        try await check("PATCH", "\(c)/messages/\(first.id)", json: #"{"text":"hello again"}"#, expect: 200)
        try await check("POST", "\(c)/messages/\(first.id)/reactions", json: #"{"emoji":"👍"}"#, token: bob.token, expect: 200)
        try await check("GET", "\(c)/messages", expect: 200)
        try await check("GET", "\(c)/messages?before=2&limit=1", expect: 200)
        try await check("GET", "\(c)/changes?since=0", expect: 200)
        try await check("GET", "\(c)/messages/\(first.id)/reads", expect: 200)
        try await check("POST", "\(c)/read", json: #"{"upToSeq":2}"#, token: bob.token, expect: 200)
        try await check("POST", "\(c)/delivered", json: #"{"upToSeq":2}"#, token: bob.token, expect: 200)
        try await check("GET", c, expect: 200)
        try await check("GET", "conversations", expect: 200)
        try await check("GET", "conversations?limit=1", expect: 200)
        try await check("GET", "conversations?changedSince=s1.0", expect: 200)
        try await check("GET", "\(c)/participants", expect: 200)
        try await check("GET", "search?q=hello", expect: 200)
        try await check("GET", "users/me", expect: 200)
        try await check("GET", "users?q=a", expect: 200)
        try await check("GET", "organization", expect: 200)
        try await check("POST", "conversations", json: #"{"type":"group","participantIds":["\#(bob.id)"],"name":"Team"}"#, expect: 201)
        try await check("DELETE", "\(c)/messages/\(first.id)", expect: 200)
        try await check("POST", "attachments/uploads", json: #"{"name":"a.txt","contentType":"text/plain","size":3}"#, expect: 201)
        try await check("POST", "auth/refresh", expect: 200)
        try await check("POST", "auth/login", json: #"{"organization":"acme","email":"alice@x.io","password":"correct horse battery"}"#, expect: 200)
        // Errors have the Error body and a documented status.
        try await check("GET", "conversations/\(EntityID())", expect: 404)
        try await check("POST", "\(c)/messages", json: #"{"text":"no id"}"#, expect: 400)
        try await check("GET", "\(c)/messages?limit=zero", expect: 400)
        try await check("GET", "users/me", token: "not-a-token", expect: 401)
        try await check("POST", "auth/login", json: #"{"organization":"acme","email":"alice@x.io","password":"wrong-password"}"#, expect: 401)
        // A broken answer is caught: the validator is not a yes-man.
        let wrong = Data(#"{"id":"x","type":"direct"}"#.utf8)
        #expect(!validator.check(body: wrong, method: "GET", path: c, status: 200).isEmpty)
        #expect(!validator.check(body: Data("{}".utf8), method: "GET", path: c, status: 418).isEmpty)
    }
}

/// Enough of JSON Schema (2020-12, as OpenAPI 3.1 uses it) to check Parley's answers: `$ref`,
/// `type`, `required`, `properties`, `additionalProperties`, `items`, `enum`, `oneOf`, `anyOf`,
/// `minimum`, `pattern`. Finds the operation for a concrete path by matching `{name}` segments.
struct SchemaValidator {
    let document: [String: Any]

    func resolve(_ ref: String) -> [String: Any]? {
        guard ref.hasPrefix("#/") else { return nil }
        var node: Any = document
        for part in ref.dropFirst(2).split(separator: "/") {
            guard let next = (node as? [String: Any])?[String(part)] else { return nil }
            node = next
        }
        return node as? [String: Any]
    }

    /// Problems of an answer to `method path` with `status`; empty when it fits.
    func check(body: Data, method: String, path: String, status: Int) -> [String] {
        let bare = "/api/v1/" + (path.split(separator: "?").first.map(String.init) ?? path)
        let paths = document["paths"] as? [String: [String: Any]] ?? [:]
        // The most specific template: a literal segment beats a {parameter}.
        let candidates = paths.filter { Self.matches(template: $0.key, bare) }
        guard let (_, item) = candidates.min(by: { $0.key.filter { $0 == "{" }.count < $1.key.filter { $0 == "{" }.count }) else {
            return ["no path for \(bare)"]
        }
        guard let operation = item[method.lowercased()] as? [String: Any] else { return ["no \(method) for \(bare)"] }
        guard var response = (operation["responses"] as? [String: Any])?[String(status)] as? [String: Any] else {
            return ["status \(status) is not documented"]
        }
        if let ref = response["$ref"] as? String { response = resolve(ref) ?? [:] }
        guard let schema = ((response["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any] else {
            return body.isEmpty ? [] : ["a body where none is documented"]
        }
        guard let value = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else { return ["not JSON"] }
        return validate(value, schema, at: "$")
    }

    static func matches(template: String, _ path: String) -> Bool {
        let a = template.split(separator: "/"), b = path.split(separator: "/")
        return a.count == b.count && zip(a, b).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
    }

    func validate(_ value: Any, _ schema: [String: Any], at where_: String) -> [String] {
        if let ref = schema["$ref"] as? String {
            guard let target = resolve(ref) else { return ["\(where_): unresolved \(ref)"] }
            return validate(value, target, at: where_)
        }
        if let options = schema["oneOf"] as? [[String: Any]] {
            let fits = options.filter { validate(value, $0, at: where_).isEmpty }.count
            return fits == 1 ? [] : ["\(where_): fits \(fits) of oneOf"]
        }
        if let options = schema["anyOf"] as? [[String: Any]] {
            return options.contains { validate(value, $0, at: where_).isEmpty } ? [] : ["\(where_): fits none of anyOf"]
        }
        if let values = schema["enum"] as? [String], !values.contains(value as? String ?? "\u{0}") {
            return ["\(where_): \(value) not in enum"]
        }
        var problems: [String] = []
        switch schema["type"] as? String {
        case "object":
            guard let object = value as? [String: Any] else { return ["\(where_): not an object"] }
            for key in schema["required"] as? [String] ?? [] where object[key] == nil { problems.append("\(where_).\(key) missing") }
            let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
            for (key, item) in object {
                if let property = properties[key] {
                    problems += validate(item, property, at: "\(where_).\(key)")
                } else if let additional = schema["additionalProperties"] as? [String: Any] {
                    problems += validate(item, additional, at: "\(where_).\(key)")
                }
            }
        case "array":
            guard let array = value as? [Any] else { return ["\(where_): not an array"] }
            if let items = schema["items"] as? [String: Any] {
                for (index, item) in array.enumerated() { problems += validate(item, items, at: "\(where_)[\(index)]") }
            }
        case "string":
            guard let string = value as? String else { return ["\(where_): not a string"] }
            if let pattern = schema["pattern"] as? String, string.range(of: pattern, options: .regularExpression) == nil {
                problems.append("\(where_): \(string) does not match \(pattern)")
            }
        case "integer":
            guard let number = value as? NSNumber, number.doubleValue == number.doubleValue.rounded() else {
                return ["\(where_): not an integer"]
            }
            if let minimum = schema["minimum"] as? Int64, number.int64Value < minimum { problems.append("\(where_): below \(minimum)") }
        case "boolean":
            if !(value is Bool) { problems.append("\(where_): not a boolean") }
        default:
            break
        }
        return problems
    }
}
