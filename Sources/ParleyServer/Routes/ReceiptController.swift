import Hummingbird
import ParleyProtocol

/// Read and delivery receipts over HTTP (the same as the `read` and `delivered` commands).
struct ReceiptController: Sendable {
    let signals: LiveSignals

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("conversations/:id/read", use: read)
        group.post("conversations/:id/delivered", use: delivered)
    }

    @Sendable func read(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(ReadRequest.self)
        return try JSONResponse.make(try await signals.markRead(body, in: id, by: identity))
    }

    /// `{upToSeq}` → the caller's `{userId, readSeq, deliveredSeq}`.
    @Sendable func delivered(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(DeliveredBody.self)
        return try JSONResponse.make(try await signals.markDelivered(
            DeliveredCommand(conversationId: id, upToSeq: body.upToSeq), by: identity))
    }

    struct DeliveredBody: Decodable { var upToSeq: Int64 }
}
