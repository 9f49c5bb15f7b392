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
    /// v1.2's member and reader pages.
    public static let participantsPageDefault = 100, participantsPageMax = 500
    /// Page size of `/changes`: default and maximum.
    public static let changesPageDefault = 100, changesPageMax = 500

    /// Whether a string holds U+0000, which no stored text may contain (SQLite C strings end there).
    public static func containsNul(_ text: String) -> Bool {
        text.utf8.contains(0)
    }

    /// `text` trimmed of leading and trailing whitespace and newlines, as the server stores it.
    public static func trimmed(_ text: String) -> String {
        text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
