import Foundation
import ParleyProtocol
import ParleyStorage

/// What a report may name, checked on one snapshot of the store.
///
/// - A report names a message, a user, or both, with a reason of 1–1000 characters.
/// - The message is one the reporter can read (a participant of its conversation); to anyone
///   else it does not exist. Its sender becomes the report's user when none is given.
/// - The user is an active user of the reporter's organization; others do not exist.
public enum ReportRules {
    /// The longest reason, in characters.
    public static let maxReason = 1000

    /// The report to store, or why not.
    public static func report(_ request: CreateReportRequest, by reporter: Identity, now: Date, in tx: any StoreTransaction) async throws -> Report {
        let reason = Limits.trimmed(request.reason)
        guard (1...maxReason).contains(reason.count), !Limits.containsNul(reason) else {
            throw ChatError.invalid("reason must be 1–\(maxReason) characters")
        }
        guard request.messageId != nil || request.userId != nil else { throw ChatError.invalid("Give messageId, userId or both") }
        var conversationId: EntityID?
        var userId = request.userId
        if let messageId = request.messageId {
            guard let message = try await tx.message(messageId), try await tx.isParticipant(reporter.userId, of: message.conversationId)
            else { throw ChatError.notFound("Message") }
            conversationId = message.conversationId
            if userId == nil, message.type != .system { userId = message.senderId }
        }
        if let user = request.userId {
            guard try await tx.organizationsOfActiveUsers([user])[user] == reporter.organizationId else { throw ChatError.notFound("User") }
        }
        return Report(
            id: .timeOrdered(at: now), reporterId: reporter.userId, messageId: request.messageId, conversationId: conversationId,
            userId: userId, reason: reason, status: .open, createdAt: now.wholeMilliseconds)
    }
}
