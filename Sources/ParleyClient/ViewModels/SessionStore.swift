import Foundation
import Observation
import ParleyProtocol
import NIOConcurrencyHelpers

/// Where an app keeps the signed-in user between launches (the token is a credential: the
/// Keychain on Apple platforms, a private file elsewhere).
public protocol SessionStore: Sendable {
    /// The stored session, or nil.
    func load() throws -> AuthResponse?
    /// Stores the session (nil forgets it).
    func save(_ session: AuthResponse?) throws
}

/// A ``SessionStore`` as the place a sign-in's renewed tokens are saved: each renewal is
/// written before it is used, so the next launch presents the refresh token that still works.
public struct SessionStoreCredentials: CredentialStorage {
    /// Where the session is kept.
    public let store: any SessionStore

    /// Renewals saved into `store`.
    public init(store: any SessionStore) { self.store = store }

    /// The saved session's tokens.
    public func loadTokens() -> SessionTokens? {
        (try? store.load()).flatMap { $0 }.map { SessionTokens($0) }
    }

    /// Writes the tokens into the saved session (its user stays).
    public func saveTokens(_ tokens: SessionTokens) throws {
        guard var session = try store.load() else { return }
        session.token = tokens.token
        session.refreshToken = tokens.refreshToken
        session.expiresAt = tokens.expiresAt
        try store.save(session)
    }
}

/// A session kept as a JSON file only its owner may read (mode 0600).
public struct FileSessionStore: SessionStore {
    /// The file.
    public let path: String

    /// A store in the file at `path`.
    public init(path: String) { self.path = path }

    /// The session in the file; nil when there is no file.
    public func load() throws -> AuthResponse? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try WireCoding.makeDecoder().decode(AuthResponse.self, from: data)
    }

    /// Writes the session to the file with mode 0600, creating its folder; nil deletes the file.
    public func save(_ session: AuthResponse?) throws {
        guard let session else {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            return
        }
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let data = try WireCoding.makeEncoder().encode(session)
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}

/// Display names and pictures by user id, readable from any thread (view models resolve
/// names while the directory loads in the background).
public final class NameBook: Sendable {
    // NIOLockedValueBox, not Synchronization.Mutex: this ships at iOS 17 / macOS 14.
    private let people = NIOLockedValueBox<[EntityID: (name: String, picture: String?)]>([:])

    /// A book with no names yet.
    public init() {}

    /// The user's display name, if known.
    public func name(_ id: EntityID) -> String? { people.withLockedValue { $0[id]?.name } }

    /// The address of the user's picture (``User/avatarUrl``), if they have one and are known.
    public func picture(_ id: EntityID) -> String? { people.withLockedValue { $0[id]?.picture } }

    /// Learns the names and pictures of these users.
    public func learn(_ users: [User]) {
        people.withLockedValue { people in for user in users { people[user.id] = (user.displayName, user.avatarUrl) } }
    }
}
