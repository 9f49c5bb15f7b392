import Foundation
import ParleyProtocol

/// The user's own profile: the name and picture the organization sees.
extension ChatClient {
    /// Changes the user's display name (1–100 characters, trimmed, no control characters).
    /// Everyone in the organization sees it at once (`user.updated`); the cached directory has
    /// it when this returns. Online only.
    @discardableResult
    public func setDisplayName(_ name: String) async throws -> User {
        try await updateProfile(UpdateProfileRequest(displayName: name))
    }

    /// Uploads the image at `file` (PNG, JPEG, GIF or WebP, as `contentType` says) and makes it
    /// the user's picture; the previous one is deleted by the server once nothing refers to it.
    /// Online only.
    @discardableResult
    public func setAvatar(file: URL, contentType: String) async throws -> User {
        guard contentType.lowercased().hasPrefix("image/") else {
            throw ClientError(kind: .server, code: .invalidRequest, message: "A picture must be an image")
        }
        let attachment = try await transport.uploadPicture(file: file, contentType: contentType)
        return try await updateProfile(UpdateProfileRequest(avatar: .set(attachment.id)))
    }

    /// Takes the user's picture away (screens show initials again).
    @discardableResult
    public func removeAvatar() async throws -> User {
        try await updateProfile(UpdateProfileRequest(avatar: .remove))
    }

    /// Someone's picture, through the media cache (downloaded once, then from memory or disk);
    /// nil when they have none or it cannot be had now.
    public func pictureData(of user: User) async -> Data? {
        guard let url = user.avatarUrl else { return nil }
        return try? await media.picture(url)
    }

    private func updateProfile(_ change: UpdateProfileRequest) async throws -> User {
        let user = try await transport.updateProfile(change)
        try await database.apply(profile: user)
        notify(.directory)
        notify(.conversations)
        return user
    }
}
