import ArgumentParser
import Foundation
import Logging
import ParleyServer
import ParleySQLite

/// `parley backup`: a consistent copy of an embedded (SQLite) server while it runs.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a SQLite server's database and attachments into a new folder, while it runs.",
        discussion: """
            The database is copied with SQLite's online backup in one read transaction: the copy is the \
            database as of one commit, and sends go on meanwhile. Every message acknowledged before the \
            backup began is in it. Attachments are copied after the database. Run it on the server's \
            machine, with the server's --data-dir (and --attachments-dir if it has one). Restore with \
            `parley restore`. For PostgreSQL use pg_dump (README, "In production").
            """)

    @Option(name: .customLong("data-dir"), help: "The server's data directory (env PARLEY_DATA_DIR; default ./parley-data).")
    var dataDirectory: String?
    @Option(name: .customLong("attachments-dir"), help: "The server's attachments folder, if it has its own (env PARLEY_ATTACHMENTS_DIR).")
    var attachmentsDirectory: String?
    @Option(name: .customLong("to"), help: "A new folder for the backup (it must not exist, or be empty).")
    var destination: String

    func run() async throws {
        let configuration = try storageConfiguration(
            dataDirectory: dataDirectory, attachmentsDirectory: attachmentsDirectory, databaseURL: "")
        do {
            let started = ContinuousClock.now
            let manifest = try SQLiteBackup.backup(configuration.sqliteFiles, to: destination)
            let taken = ContinuousClock.now - started
            print("backup of \(configuration.databasePath) in \(destination): database \(manifest.databaseBytes) bytes, "
                + "\(manifest.attachmentFiles) attachment files (\(manifest.attachmentBytes) bytes), took \(taken)")
        } catch {
            throw fail("backup failed, nothing kept: \(error)")
        }
    }
}

/// `parley restore`: a backup into a new data directory, or a restored PostgreSQL database
/// marked as restored.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a `parley backup` into a new data directory (or mark a restored PostgreSQL database).",
        discussion: """
            The restored data gets a new store identity: clients that cached more than the backup holds \
            (messages sent after it was taken) start their caches again when they reconnect, instead of \
            keeping messages the server no longer has. With --database (PostgreSQL, after pg_restore or \
            psql of a dump) only that identity is renewed. Then start `parley serve` on it as usual.
            """)

    @Option(name: .customLong("from"), help: "The backup folder (made by `parley backup`).")
    var backup: String?
    @Option(name: .customLong("data-dir"), help: "The new data directory (env PARLEY_DATA_DIR; default ./parley-data); it must hold no database.")
    var dataDirectory: String?
    @Option(name: .customLong("attachments-dir"), help: "Where the attachments go, if the server keeps them outside the data directory (env PARLEY_ATTACHMENTS_DIR).")
    var attachmentsDirectory: String?
    @Option(name: .customLong("database"), help: "A PostgreSQL database restored from a dump: renew its store identity (env PARLEY_DATABASE_URL).")
    var databaseURL: String?

    func run() async throws {
        if let databaseURL {
            guard backup == nil else { throw fail("give --from (SQLite) or --database (PostgreSQL), not both") }
            let configuration = try storageConfiguration(dataDirectory: dataDirectory, databaseURL: databaseURL)
            let store: any ParleyStore
            do {
                store = try await configuration.makeStore(logger: .init(label: "parley.restore"))
            } catch {
                throw fail("cannot open the store: \(error)")
            }
            let id = try await store.renewStoreIdentity()
            try await store.close()
            print("\(configuration.databaseDescription) marked as restored (store identity \(id))")
            return
        }
        guard let backup else { throw fail("give --from BACKUP (or --database URL for PostgreSQL)") }
        let configuration = try storageConfiguration(
            dataDirectory: dataDirectory, attachmentsDirectory: attachmentsDirectory, databaseURL: "")
        do {
            let manifest = try SQLiteBackup.manifest(of: backup)
            let id = try SQLiteBackup.restore(from: backup, into: configuration.sqliteFiles)
            print("restored the backup taken \(ISO8601DateFormatter().string(from: manifest.takenAt)) into \(configuration.dataDirectory) "
                + "(store identity \(id)); start it with: parley serve --data-dir \(configuration.dataDirectory)")
        } catch {
            throw fail("restore failed, nothing changed: \(error)")
        }
    }
}

/// The data's place as `parley serve` would take it from these options and the environment.
func storageConfiguration(dataDirectory: String?, attachmentsDirectory: String? = nil, databaseURL: String? = nil) throws -> ServerConfiguration {
    let options = [
        "PARLEY_DATA_DIR": dataDirectory, "PARLEY_ATTACHMENTS_DIR": attachmentsDirectory, "PARLEY_DATABASE_URL": databaseURL,
    ].compactMapValues { $0 }
    do {
        return try ServerConfiguration(storageSettings: ServerSettings(options: options))
    } catch {
        throw fail(error.description)
    }
}
