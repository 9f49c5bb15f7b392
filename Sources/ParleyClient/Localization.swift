import Foundation

/// The SDK's user-facing texts, from its String Catalog (`Resources/Localizable.xcstrings`).
///
/// On Apple platforms the build compiles the catalog into the bundle's `.lproj` folders and
/// Foundation's lookup finds them; where the catalog is copied as it is (SwiftPM on Linux) it
/// is read directly. Either way a key missing in a language falls back to English.
enum ParleyStrings {
    /// The text for `key` in `locale`'s language (English when the catalog lacks it).
    static func text(_ key: String, locale: Locale = .current) -> String {
        let language = locale.language.languageCode?.identifier ?? Catalog.source
        if let compiled = compiled(key, language: language) { return compiled }
        if let value = catalog.value(key, language: language) ?? catalog.value(key, language: Catalog.source) { return value }
        return compiled(key, language: Catalog.source) ?? key
    }

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
    public func localizedText(locale: Locale = .current) -> String {
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

    /// A sentence for any error a screen shows: a ``ClientError``'s localized text (with the
    /// server's explanation of a refused request in English, where it is the same language), a
    /// hook's own reason, or a general sentence; never a raw code.
    public static func readable(_ error: any Error, locale: Locale = .current) -> String {
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
