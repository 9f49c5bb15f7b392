import Foundation
import ParleyProtocol

/// The signed-in user's own name and picture, for a profile screen.
extension ChatSession {
    /// Renames the signed-in user for everyone in the organization; false (with
    /// ``profileError``) when the server refuses or cannot be reached.
    @discardableResult
    public func rename(to name: String) async -> Bool {
        await changeProfile { try await $0.setDisplayName(name) }
    }

    /// Makes these image bytes (a picked photo) the user's picture, made a JPEG of at most
    /// 512 pixels first where the platform can (``ImageDownscaling/picture(_:contentType:maxPixelSize:)``);
    /// `contentType` is its MIME type ("image/heic"). False (with ``profileError``) when refused.
    @discardableResult
    public func setPicture(_ data: Data, contentType: String) async -> Bool {
        await changeProfile { client in
            let picture = contentType.lowercased().hasPrefix("image/")
                ? ImageDownscaling.picture(data, contentType: contentType) : (data: data, contentType: contentType)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("parley-picture-\(UUID().uuidString)")
            try picture.data.write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            return try await client.setAvatar(file: file, contentType: picture.contentType)
        }
    }

    /// Takes the user's picture away.
    @discardableResult
    public func removePicture() async -> Bool {
        await changeProfile { try await $0.removeAvatar() }
    }

    /// Someone's picture (``User/avatarUrl``), downloaded once through the media cache; nil
    /// when signed out or it cannot be had now.
    public func pictureData(_ url: String) async -> Data? {
        guard let client else { return nil }
        return try? await client.media.picture(url)
    }

    private func changeProfile(_ change: (ChatClient) async throws -> User) async -> Bool {
        guard let client else { return false }
        do {
            let changed = try await change(client)
            user?.displayName = changed.displayName
            user?.avatarUrl = changed.avatarUrl
            names.learn([changed])
            profileError = nil
            return true
        } catch {
            profileError = ClientError.readable(error)
            return false
        }
    }
}
