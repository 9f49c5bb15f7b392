#if canImport(SwiftUI)
import Foundation
import ParleyClient
import ParleyProtocol
import Security

/// Keeps the signed-in user's session (its token is a credential) in the Keychain, one item
/// per server, readable only while the device is unlocked, never synced to other devices.
public struct KeychainSessionStore: SessionStore {
    /// The Keychain item's account: the server's host and port.
    public let account: String

    /// A store for a server's session.
    public init(server: URL) {
        account = "\(server.host() ?? "server"):\(server.port ?? 0)"
    }

    private var query: [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: "parley",
            kSecAttrAccount as String: account,
        ]
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
