import Foundation
import ParleyProtocol
import ParleyStorage

/// Who may download an attachment: its uploader, the participants of a conversation in which
/// a message not deleted carries it, and, for someone's picture, their organization. To
/// anyone else it does not exist (no hint that it does, even within the organization).
public enum AttachmentRules {
    /// The attachment if `viewer` may download it, else nil.
    public static func visible(_ id: EntityID, to viewer: EntityID, in tx: any StoreTransaction) async throws -> StoredAttachment? {
        guard let attachment = try await tx.attachment(id) else { return nil }
        if attachment.uploaderId == viewer { return attachment }
        if try await tx.isAttachmentShared(id, with: viewer) { return attachment }
        return try await ProfileRules.isVisibleAvatar(id, to: viewer, in: tx) ? attachment : nil
    }
}
