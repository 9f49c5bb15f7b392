import Foundation
@testable import ParleyServer
import Testing

/// The OpenAPI document as built (`OpenAPI/OpenAPIDocument.swift`), without a server: what
/// code generators and documentation tools trip over. Every operation says what it does and
/// what its refusals are, every declared shape is used, and the served bytes are the same on
/// every build (clients cache and diff them).
@Suite struct OpenAPIDocumentShapeTests {
    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: OpenAPIDocument.json) as? [String: Any])
    }

    /// Every operation as (method path, operation).
    static func operations(_ document: [String: Any]) throws -> [(name: String, operation: [String: Any])] {
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        return paths.flatMap { path, item in
            item.compactMap { method, value in
                method == "parameters" ? nil : (name: "\(method.uppercased()) \(path)", operation: value as? [String: Any] ?? [:])
            }
        }
    }

    /// Each operation has a summary, and its refusals follow from what it takes: a token means
    /// 401 (and 429, 503), a body means 400 and 413, a query means 400; every refusal has the
    /// `Error` body.
    @Test func everyOperationDocumentsItsRefusals() throws {
        let document = try Self.document()
        let operations = try Self.operations(document)
        #expect(operations.count >= 45)
        for (name, operation) in operations {
            #expect(!((operation["summary"] as? String) ?? "").isEmpty, "\(name) has no summary")
            let responses = try #require(operation["responses"] as? [String: Any], "\(name)")
            let statuses = Set(responses.keys)
            if operation["security"] != nil { #expect(statuses.isSuperset(of: ["401", "429", "503"]), "\(name): \(statuses.sorted())") }
            if operation["requestBody"] != nil { #expect(statuses.isSuperset(of: ["400", "413"]), "\(name): \(statuses.sorted())") }
            let parameters = operation["parameters"] as? [[String: Any]] ?? []
            if parameters.contains(where: { $0["in"] as? String == "query" }) { #expect(statuses.contains("400"), "\(name)") }
            for (status, response) in responses where status.hasPrefix("4") || status.hasPrefix("5") {
                #expect((response as? [String: Any])?["$ref"] as? String == "#/components/responses/\(status)", "\(name) \(status)")
            }
        }
        let errors = try #require((document["components"] as? [String: Any])?["responses"] as? [String: [String: Any]])
        for (status, response) in errors {
            let schema = ((response["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any]
            #expect(schema?["$ref"] as? String == "#/components/schemas/Error", "\(status)")
            #expect(!((response["description"] as? String) ?? "").isEmpty)
        }
    }

    /// Every shape in `components.schemas` is referenced somewhere (a shape nothing uses is
    /// documentation of nothing, usually a rename that left the old one behind).
    @Test func everyDeclaredShapeIsUsed() throws {
        let document = try Self.document()
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let text = String(decoding: OpenAPIDocument.json, as: UTF8.self)
        for name in schemas.keys {
            #expect(text.contains("\"#/components/schemas/\(name)\""), "\(name) is never referenced")
        }
    }

    /// The served document is the same bytes every time it is built: sorted keys, no escaped
    /// slashes in its paths.
    @Test func theDocumentIsTheSameBytesEveryBuild() throws {
        let rebuilt = try JSONSerialization.data(withJSONObject: OpenAPIDocument.document(), options: [.sortedKeys, .withoutEscapingSlashes])
        #expect(rebuilt == OpenAPIDocument.json)
        let text = String(decoding: OpenAPIDocument.json, as: UTF8.self)
        #expect(!text.contains("\\/") && text.contains("\"/api/v1/"))
        #expect(try Self.document()["openapi"] as? String == "3.1.0")
    }
}
