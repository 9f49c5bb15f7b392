import Foundation
import ParleyProtocol
import ParleyStorage

/// What a person may call themselves and show as their picture, and who sees the picture.
///
/// A display name is shown to the whole organization, in browsers, terminals and
/// notifications: it is trimmed, 1–100 characters, and carries no control characters or
/// bidirectional overrides. A picture is an image its owner uploaded; once it is someone's
/// picture every member of their organization may download it. A picture replaced or
/// removed is left to the attachment collector, which deletes it once nothing refers to it.
public enum ProfileRules {
    /// The display name as stored, or the reason it is refused.
    public static func displayName(_ given: String) throws -> String {
        try MessageValidation.shownName(given, field: "displayName", max: Limits.maxDisplayNameCharacters)
    }

    /// Applies the user's own change of name or picture; a refusal changes nothing.
    public static func update(_ userId: EntityID, _ change: UpdateProfileRequest, in tx: any StoreTransaction) async throws {
        guard change.displayName != nil || change.avatar != nil else {
            throw ChatError.invalid("Give displayName, avatarId or both")
        }
        guard let current = try await tx.profile(of: userId) else { throw ChatError.unauthorized }
        let name = try change.displayName.map(displayName) ?? current.displayName
        var avatar = current.avatarId
        switch change.avatar {
        case .set(let id):
            // Someone else's upload does not exist for the caller (no hint that it does).
            guard let attachment = try await tx.attachment(id), attachment.uploaderId == userId else {
                throw ChatError.notFound("Attachment")
            }
            guard attachment.contentType.lowercased().hasPrefix("image/") else {
                throw ChatError.invalid("A picture must be an image (its upload's Content-Type is \(attachment.contentType))")
            }
            avatar = id
        case .remove: avatar = nil
        case nil: break
        }
        try await tx.setProfile(of: userId, displayName: name, avatarId: avatar)
        if let old = current.avatarId, old != avatar { try await tx.orphanAttachment(old) }
    }

    /// Whether `viewer` may download the attachment as someone's picture.
    static func isVisibleAvatar(_ attachmentId: EntityID, to viewer: EntityID, in tx: any StoreTransaction) async throws -> Bool {
        try await tx.isAvatar(attachmentId, visibleTo: viewer)
    }
}
