import Foundation

/// The OpenAPI 3.1 document of the whole HTTP API, served at `GET /api/v1/openapi.json`.
///
/// One entry per route the router has (a test compares the two both ways), with the statuses
/// each can answer and the shapes from ``OpenAPISchemas``. `docs/protocol.md` says the rules
/// in prose; this says the shapes to a machine (code generators, schemathesis in `.ci/run`).
enum OpenAPIDocument {
    typealias Schema = OpenAPISchemas.Schema

    /// The document as served: JSON with sorted keys, built once.
    static let json: Data = {
        // Built from literals only: it cannot fail to encode.
        (try? JSONSerialization.data(withJSONObject: document(), options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }()

    /// Every operation as (path in OpenAPI form, lowercase method), for the router comparison.
    static var operations: [(path: String, method: String)] {
        paths.flatMap { path, item in item.keys.filter { $0 != "parameters" }.map { (path, $0) } }
    }

    static func document() -> Schema {
        [
            "openapi": "3.1.0",
            "info": [
                "title": "Parley",
                "version": "1.2",
                "description": "Parley's HTTP API. The WebSocket protocol (GET /api/v1/ws) and every rule are in docs/protocol.md.",
            ] as Schema,
            "servers": [["url": "/"]],
            "tags": ["operations", "auth", "organization", "users", "safety", "conversations", "messages", "threads", "pins", "receipts", "attachments", "devices", "web client"]
                .map { ["name": $0] },
            "paths": paths,
            "components": [
                "schemas": OpenAPISchemas.all,
                "responses": errorResponses,
                "securitySchemes": ["bearer": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"] as Schema],
            ] as Schema,
        ]
    }

    // MARK: Building blocks

    /// An operation. `auth` adds the bearer requirement and its 401; `errors` are the other
    /// error statuses it can answer (each with the `Error` body).
    static func op(
        _ tag: String, _ summary: String, auth: Bool = true, query: [Schema] = [], body: Schema? = nil,
        _ responses: [String: Schema], errors: [Int] = []
    ) -> Schema {
        var all = responses
        var codes = Set(errors)
        if auth { codes.formUnion([401, 429, 503]) }
        if body != nil { codes.formUnion([400, 413]) }
        if !query.isEmpty { codes.insert(400) }
        for code in codes { all[String(code)] = ["$ref": "#/components/responses/\(code)"] }
        var operation: Schema = ["tags": [tag], "summary": summary, "responses": all]
        if auth { operation["security"] = [["bearer": [String]()]] }
        if !query.isEmpty { operation["parameters"] = query }
        if let body { operation["requestBody"] = body }
        return operation
    }

    static func jsonBody(_ schemaName: String, required: Bool = true) -> Schema {
        ["required": required, "content": ["application/json": ["schema": OpenAPISchemas.ref(schemaName)]]]
    }

    static func answer(_ description: String, _ schemaName: String? = nil, headers: Schema? = nil) -> Schema {
        var response: Schema = ["description": description]
        if let schemaName { response["content"] = ["application/json": ["schema": OpenAPISchemas.ref(schemaName)]] }
        if let headers { response["headers"] = headers }
        return response
    }

    static func query(_ name: String, _ schema: Schema, _ description: String) -> Schema {
        ["name": name, "in": "query", "required": false, "schema": schema, "description": description]
    }

    static func path(_ names: String...) -> Schema {
        ["parameters": names.map { name -> Schema in
            let schema: Schema = name == "code" || name == "token" || name == "emoji" || name == "file"
                ? OpenAPISchemas.string(min: 1) : OpenAPISchemas.id
            return ["name": name, "in": "path", "required": true, "schema": schema]
        }]
    }

    static var noContent: Schema { answer("Done; no body") }
    static func limitQuery(_ max: Int64) -> Schema {
        query("limit", OpenAPISchemas.integer(min: 1, max: max), "Page size (larger values are capped)")
    }

    /// The error answers, one per status, all with the `Error` body.
    static var errorResponses: [String: Schema] { [
        400: "invalid_request: a malformed or invalid body, query or value", 401: "unauthorized: no, a bad or an expired token",
        403: "forbidden: allowed to see but not to do this", 404: "not_found: nothing there, or nothing the caller may see",
        409: "conflict: the state does not allow it", 413: "payload_too_large", 416: "The range cannot be satisfied",
        429: "rate_limited: see Retry-After", 503: "unavailable: the store cannot write now; see Retry-After",
    ].reduce(into: [:]) { result, entry in
        result[String(entry.key)] = answer(entry.value, "Error")
    } }
}
