#if canImport(SwiftUI)
import Foundation
import ParleyClient
import ParleyProtocol
import Security

/// Keeps the signed-in user's session (its token is a credential) in the Keychain, one item
/// per server, readable from the first unlock after a restart until the next restart (so a
/// renewal in the background or a push wake can save it), never synced to other devices.
///
/// With an access group (the Keychain Sharing capability, in the app and in its notification
/// service extension), the extension reads the same session.
public struct KeychainSessionStore: SessionStore {
    /// The Keychain item's account: the server's host and port.
    public let account: String
    /// The Keychain access group the item lives in, shared with the app's extensions; nil: the
    /// app's default group (its own).
    public let accessGroup: String?

    /// A store for a server's session.
    /// - Parameters:
    ///   - server: The server; one session is kept per host and port.
    ///   - accessGroup: A Keychain access group from the app's `keychain-access-groups`
    ///     entitlement, with the team prefix (`ABCDE12345.com.example.chat.shared`), to share
    ///     the session with a notification service extension; nil keeps it to the app.
    public init(server: URL, accessGroup: String? = nil) {
        account = "\(server.host() ?? "server"):\(server.port ?? 0)"
        self.accessGroup = accessGroup
    }

    private var query: [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "parley",
            kSecAttrAccount as String: account,
        ]
        if let accessGroup {
            query[kSecAttrAccessGroup as String] = accessGroup
            // On macOS an access group exists only in the data protection keychain (iOS has no
            // other one and ignores the key). Without a group the item stays where earlier
            // versions put it, so no one is signed out by an update.
            query[kSecUseDataProtectionKeychain as String] = true
        }
        return query
    }

    /// The stored session, or nil.
    public func load() throws -> AuthResponse? {
        var lookup = query
        lookup[kSecReturnData as String] = true
        lookup[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(lookup as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
        return try WireCoding.makeDecoder().decode(AuthResponse.self, from: data)
    }

    /// Stores the session (nil deletes it).
    public func save(_ session: AuthResponse?) throws {
        let deleted = SecItemDelete(query as CFDictionary)
        guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw KeychainError(status: deleted) }
        guard let session else { return }
        var item = query
        item[kSecValueData as String] = try WireCoding.makeEncoder().encode(session)
        // After the first unlock: a renewal while the phone is locked (a background refresh, a
        // push wake) must be able to save the new refresh token, which replaces the old one.
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let added = SecItemAdd(item as CFDictionary, nil)
        guard added == errSecSuccess else { throw KeychainError(status: added) }
    }
}

/// A Keychain call failed with this status.
public struct KeychainError: Error, CustomStringConvertible {
    /// The `OSStatus` the Security framework returned.
    public let status: OSStatus

    /// The status and its meaning.
    public var description: String {
        "Keychain error \(status): \(SecCopyErrorMessageString(status, nil) as String? ?? "unknown")"
    }
}
#endif
