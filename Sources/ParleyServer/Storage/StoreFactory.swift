import Foundation
import Logging
import ParleyStorage
import ParleySQLite
import ParleyPostgres

extension ServerConfiguration {
    /// Whether `databaseURL` names a PostgreSQL database (`postgres://` or `postgresql://`).
    public var usesPostgres: Bool {
        guard let scheme = databaseURL.flatMap({ URLComponents(string: $0)?.scheme?.lowercased() }) else { return false }
        return scheme == "postgres" || scheme == "postgresql"
    }

    /// Where the data is, for logs: the SQLite file, or the PostgreSQL URL without its password.
    public var databaseDescription: String {
        guard usesPostgres, let url = databaseURL else { return databasePath }
        return PostgresStore.redacted(url)
    }

    /// Opens the store this configuration names, migrated and ready: PostgreSQL when
    /// `databaseURL` is a `postgres://` URL, otherwise SQLite in the data directory.
    public func makeStore(logger: Logger) async throws -> any ParleyStore {
        if let url = databaseURL, !url.isEmpty {
            guard usesPostgres else {
                throw ServerStartError("Unsupported database URL \(databaseDescription): use postgres:// or postgresql://")
            }
            return try await PostgresStore.connect(url: url, logger: logger, startTimeout: databaseStartTimeout)
        }
        return try SQLiteStore(path: databasePath, busyTimeout: sqliteBusyTimeout)
    }
}

extension ServerConfiguration {
    /// Where attachment bytes go: PostgreSQL for a database cluster (so every node serves every
    /// attachment; files in the data directory from before are still read), files in
    /// `--attachments-dir` when the operator mounts shared storage, else the data directory.
    func attachmentBlobs(for store: any ParleyStore) -> any AttachmentBlobs {
        let files = FileBlobs(directory: attachmentsDirectory)
        if attachmentsPath == nil, let postgres = store as? PostgresStore {
            return PostgresBlobs(client: postgres.client, logger: postgres.logger, fallback: files)
        }
        return files
    }
}
