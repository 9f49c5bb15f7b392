import Foundation

/// Where an embedded (SQLite) server keeps its data: what a backup copies and a restore fills.
public struct SQLiteFiles: Sendable, Equatable {
    /// The data directory (created on first start).
    public var dataDirectory: String
    /// The SQLite database file.
    public var databasePath: String
    /// The folder of uploaded files.
    public var attachmentsDirectory: String

    /// The places, as given.
    public init(dataDirectory: String, databasePath: String, attachmentsDirectory: String) {
        self.dataDirectory = dataDirectory
        self.databasePath = databasePath
        self.attachmentsDirectory = attachmentsDirectory
    }
}
