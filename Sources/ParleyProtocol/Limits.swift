import Foundation

/// The limits of the wire contract, shared by the server's checks and the SDK's pre-send checks.
public enum Limits {
    /// Largest JSON body or WebSocket frame, in bytes (64 KiB).
    public static let maxPayloadBytes = 64 * 1024
    /// Longest message text, in characters (grapheme clusters) after trimming.
    public static let maxTextCharacters = 5000
    /// Longest `clientMessageId`, in characters.
    public static let maxClientMessageIdLength = 128
    /// Most entries in a message's `metadata`.
    public static let maxMetadataEntries = 32
    /// Mentions one message may carry.
    public static let maxMentions = 50
    /// Pinned messages one conversation may have.
    public static let maxPins = 50
    /// Longest conversation name, in characters.
    public static let maxConversationNameCharacters = 200
    /// Longest display name, in characters.
    public static let maxDisplayNameCharacters = 100
    /// Longest organization name, in characters.
    public static let maxOrganizationCharacters = 100
    /// Shortest and longest password, in characters.
    public static let passwordLength = 8...128
    /// Most participants in a group conversation.
    public static let maxGroupParticipants = 1000
    /// Most message ids in one batched read receipt.
    public static let maxReadBatch = 500
    /// Page size of `/messages`: default and maximum.
    public static let messagesPageDefault = 50, messagesPageMax = 200
    /// Page size of the member and reader pages: default and maximum.
    public static let participantsPageDefault = 100, participantsPageMax = 500
    /// Page size of `/changes`: default and maximum.
    public static let changesPageDefault = 100, changesPageMax = 500

    /// Whether a string holds U+0000, which no stored text may contain (SQLite C strings end there).
    public static func containsNul(_ text: String) -> Bool {
        text.utf8.contains(0)
    }

    /// Whether `text` holds a character no name may contain: a C0 or C1 control (ESC, and with
    /// it every terminal escape sequence; tabs and line breaks too), DEL, a bidirectional
    /// embedding, override or isolate (U+202A–U+202E, U+2066–U+2069: "invoice\u{202E}gnp.exe"
    /// shows as "invoiceexe.png"), or a line or paragraph separator. Display names, organization
    /// and group names and file names are refused (`invalid_request`) when it is true; message
    /// text may hold line breaks and is left to clients, which show it as text.
    public static func containsUnsafeCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: isUnsafe)
    }

    /// `text` with each character ``containsUnsafeCharacters(_:)`` refuses replaced by U+FFFD
    /// (line breaks too unless `keepingNewlines`): for what the server derives from text stored
    /// before names were checked (push titles, download file names).
    public static func neutralized(_ text: String, keepingNewlines: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar == "\n" && keepingNewlines {
                out.append(scalar)
            } else if scalar == "\t" {
                out.append(" ")
            } else {
                out.append(isUnsafe(scalar) ? "\u{FFFD}" : scalar)
            }
        }
        return String(out)
    }

    /// Whether one character is of those ``containsUnsafeCharacters(_:)`` refuses.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: true
        default: false
        }
    }

    /// `text` trimmed of leading and trailing whitespace and newlines, as the server stores it.
    public static func trimmed(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
