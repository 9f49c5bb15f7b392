import Foundation
import NIOConcurrencyHelpers

/// The SDK's user-facing texts, from its String Catalog (`Resources/Localizable.xcstrings`).
///
/// On Apple platforms the build compiles the catalog into the bundle's `.lproj` folders and
/// Foundation's lookup finds them; where the catalog is copied as it is (SwiftPM on Linux) it
/// is read directly. Either way a key missing in a language falls back to English.
public enum ParleyStrings {
    private static let chosen = NIOLockedValueBox<Locale?>(nil)

    /// The language the SDK's texts are written in: the device's (`Locale.current`, which on
    /// iOS follows the app's language setting) unless a screen sets another, as the terminal
    /// client does from `LC_ALL`, `LC_MESSAGES` and `LANG`. Set nil to follow the device again.
    public static var locale: Locale {
        get { scoped ?? chosen.withLockedValue { $0 } ?? .current }
        set { chosen.withLockedValue { $0 = newValue } }
    }

    /// A language for the work of one task and its children only, over ``locale``: a preview
    /// or a test in French while the rest of the process stays as it is
    /// (`ParleyStrings.$scoped.withValue(Locale(identifier: "fr")) { … }`).
    @TaskLocal public static var scoped: Locale?

    /// Follows the device's language again after ``locale`` was set.
    public static func followDevice() { chosen.withLockedValue { $0 = nil } }

    /// The text for `key` in `locale`'s language (English when the catalog lacks it), with each
    /// `{name}` placeholder replaced by `values[name]`.
    static func text(_ key: String, _ values: KeyValuePairs<String, String> = [:], locale: Locale = ParleyStrings.locale) -> String {
        fill(text(key, locale: locale), Dictionary(values.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }))
    }

    /// `template` with each `{name}` replaced by `values[name]` in one pass, so a value that
    /// itself reads "{name}" (a person may be called that) stays as typed. An unknown
    /// placeholder stays as it is.
    public static func fill(_ template: String, _ values: [String: String]) -> String {
        guard !values.isEmpty, template.contains("{") else { return template }
        var out = ""
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}"), let value = values[String(rest[rest.index(after: open)..<close])] else {
                out.append("{")
                rest = rest[rest.index(after: open)...]
                continue
            }
            out += value
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// The text for `key` in `locale`'s language (English when the catalog lacks it).
    static func text(_ key: String, locale: Locale) -> String {
        let language = locale.language.languageCode?.identifier ?? Catalog.source
        // A timeline asks for "You" once per message and frame: each text is looked up in the
        // bundles once per language (a bundle lookup costs microseconds), then remembered.
        let memo = language + "\u{0}" + key
        if let known = found.withLockedValue({ $0[memo] }) { return known }
        let value = compiled(key, language: language)
            ?? catalog.value(key, language: language) ?? catalog.value(key, language: Catalog.source)
            ?? compiled(key, language: Catalog.source) ?? key
        found.withLockedValue { $0[memo] = value }
        return value
    }

    /// Texts already looked up, by language and key (the catalog does not change while running).
    private static let found = NIOLockedValueBox<[String: String]>([:])

    /// The languages the catalog has texts in.
    static var languages: Set<String> { catalog.languages }

    private static func compiled(_ key: String, language: String) -> String? {
        guard let path = Bundle.module.path(forResource: language, ofType: "lproj"), let bundle = Bundle(path: path) else {
            return nil
        }
        let missing = "\u{1}missing"
        let value = bundle.localizedString(forKey: key, value: missing, table: "Localizable")
        return value == missing ? nil : value
    }

    private static let catalog = Catalog.load()

    /// A String Catalog's translated texts: language → key → value.
    struct Catalog: Sendable {
        static let source = "en"
        var texts: [String: [String: String]] = [:]

        var languages: Set<String> { Set(texts.keys) }

        func value(_ key: String, language: String) -> String? { texts[language]?[key] }

        static func load() -> Catalog {
            guard let url = Bundle.module.url(forResource: "Localizable", withExtension: "xcstrings"),
                let data = try? Data(contentsOf: url) else { return Catalog() }
            return parse(data)
        }

        /// The `stringUnit` values of a catalog's JSON.
        static func parse(_ data: Data) -> Catalog {
            struct File: Decodable {
                struct Entry: Decodable { var localizations: [String: Localization]? }
                struct Localization: Decodable { var stringUnit: Unit? }
                struct Unit: Decodable { var value: String }
                var strings: [String: Entry]
            }
            guard let file = try? JSONDecoder().decode(File.self, from: data) else { return Catalog() }
            var catalog = Catalog()
            for (key, entry) in file.strings {
                for (language, localization) in entry.localizations ?? [:] {
                    if let value = localization.stringUnit?.value { catalog.texts[language, default: [:]][key] = value }
                }
            }
            return catalog
        }
    }
}

extension ClientError: LocalizedError {
    /// A sentence for a person, in the device's language: never a code or a command.
    public var errorDescription: String? { localizedText() }

    /// The server's own explanation, when it gave one (in English).
    public var failureReason: String? { kind == .server && code != .internal ? message : nil }

    /// What the person can do about it.
    public var recoverySuggestion: String? {
        if code == .unauthorized { return ParleyStrings.text("recovery.signIn") }
        return isTransient ? ParleyStrings.text("recovery.retry") : nil
    }

    /// ``errorDescription`` in a given locale's language.
    public func localizedText(locale: Locale = ParleyStrings.locale) -> String {
        ParleyStrings.text(textKey, locale: locale)
    }

    /// The catalog key of this error's sentence.
    var textKey: String {
        switch kind {
        case .transport, .disconnected: return "error.offline"
        case .timeout: return "error.timeout"
        case .decoding: return "error.unreadable"
        case .server:
            switch code {
            case .invalidRequest: return "error.invalid"
            case .unauthorized: return "error.signedOut"
            case .forbidden: return "error.forbidden"
            case .notFound: return "error.notFound"
            case .conflict: return "error.conflict"
            case .payloadTooLarge: return "error.tooLarge"
            case .rateLimited: return "error.rateLimited"
            case .unavailable, .internal: return "error.serverTrouble"
            case nil: return "error.unknown"
            }
        }
    }

    /// A sentence for a sign-in or sign-up form: a refused sign-in says the email or password
    /// is wrong; anything else is ``readable(_:locale:)``.
    public static func readableSignIn(_ error: any Error, locale: Locale = ParleyStrings.locale) -> String {
        if let error = error as? ClientError, error.kind == .server, error.code == .unauthorized {
            return ParleyStrings.text("signIn.wrongCredentials", locale: locale)
        }
        return readable(error, locale: locale)
    }

    /// A sentence for any error a screen shows: a ``ClientError``'s localized text (with the
    /// server's explanation of a refused request in English, where it is the same language), a
    /// hook's own reason, or a general sentence; never a raw code.
    public static func readable(_ error: any Error, locale: Locale = ParleyStrings.locale) -> String {
        switch error {
        case let error as ClientError:
            let text = error.localizedText(locale: locale)
            let english = (locale.language.languageCode?.identifier ?? "en") == "en"
            if english, error.kind == .server, [.invalidRequest, .forbidden, .conflict].contains(error.code), !error.message.isEmpty {
                return text + " " + error.message.prefix(1).uppercased() + error.message.dropFirst()
                    + (error.message.hasSuffix(".") ? "" : ".")
            }
            return text
        case let vetoed as SendVetoed: return vetoed.reason
        case let failed as PreparationFailed: return failed.reason
        case let error as CocoaError where error.isFileError: return ParleyStrings.text("error.fileUnreadable", locale: locale)
        default: return ParleyStrings.text("error.unknown", locale: locale)
        }
    }
}
