#if canImport(SwiftUI)
import Foundation

/// A text of ParleyUI's own (a button, a title, a VoiceOver label) in the person's language,
/// from ParleyUI's String Catalog (`Resources/Localizable.xcstrings`, English and French); a
/// language the catalog lacks reads English. An interpolated value is a `%@` in the key
/// (`tr("Block \(name)")` is "Block %@"), so only strings are interpolated. The texts the
/// terminal shares (banner, typing, system lines) come from the SDK's catalog instead.
func tr(_ key: String.LocalizationValue) -> String {
    String(localized: key, bundle: .module)
}
#endif
