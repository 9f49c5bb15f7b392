import Foundation

/// Store identities: 32 lowercase hex digits.
package enum StoreIdentity {
    package static func make() -> String { UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased() }
}

/// The identity row is made by a migration; a database without it was changed by hand.
package struct StoreIdentityMissing: Error, CustomStringConvertible {
    package init() {}

    package var description: String { "The database has no store identity (table store_identity); it was changed outside Parley" }
}
