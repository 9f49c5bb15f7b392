import Foundation
import GRDB
import ParleyStorage

/// Backups of an embedded (SQLite) server, taken while it runs, and their restore.
///
/// A backup is a folder laid out as a data directory (`parley.sqlite`, `attachments/`,
/// `backup.json`), so `parley serve --data-dir BACKUP` would serve it as it is; `restore` copies
/// it into a new data directory and gives it a new store identity (see
/// ``ParleyStore/storeIdentity()``), which tells clients that cached more than the backup has
/// to start their caches again.
///
/// Consistency: the database is copied with SQLite's online backup in one step, inside one
/// read transaction of the WAL, so it is the database as of one commit; the server goes on
/// writing meanwhile (a reader never blocks the writer in WAL mode). Every message acknowledged
/// before the backup began was committed before that read began, so it is in the copy.
/// Attachments are copied after the database: an attachment's bytes are stored before any
/// message can reference it, and stored content is never changed, so every attachment the
/// copied database references is in the copied folder (unless it was deleted in between).
public enum SQLiteBackup {
    /// What a backup holds, written beside it as `backup.json`.
    public struct Manifest: Codable, Sendable, Equatable {
        /// The format of the folder (1).
        public var format: Int
        /// When the copy of the database was taken.
        public var takenAt: Date
        /// The store identity of the server it was taken from.
        public var storeId: String
        /// Attachment files copied.
        public var attachmentFiles: Int
        /// Their bytes together.
        public var attachmentBytes: Int64
        /// The database file's size.
        public var databaseBytes: Int64
    }

    /// Why a backup or restore did not happen. Nothing was left half-written: a backup is
    /// built in a hidden folder beside its destination and renamed into place at the end.
    public struct Failure: Error, CustomStringConvertible, Equatable {
        /// What went wrong, for a person.
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static let databaseName = "parley.sqlite"
    static let attachmentsName = "attachments"
    static let manifestName = "backup.json"

    /// Copies the running (or stopped) server of `configuration` into the new folder `destination`.
    public static func backup(_ configuration: SQLiteFiles, to destination: String) throws -> Manifest {
        let files = FileManager.default
        let source = configuration.databasePath
        guard files.fileExists(atPath: source) else {
            throw Failure("No database at \(source): is --data-dir the server's?")
        }
        if files.fileExists(atPath: destination) {
            let contents = (try? files.contentsOfDirectory(atPath: destination)) ?? ["?"]
            guard contents.isEmpty else { throw Failure("\(destination) exists and is not empty: a backup goes into a new folder") }
            try files.removeItem(atPath: destination)
        }
        let parent = (destination as NSString).deletingLastPathComponent
        let partial = ((parent.isEmpty ? "." : parent) as NSString).appendingPathComponent(
            ".\((destination as NSString).lastPathComponent).partial-\(UUID().uuidString.prefix(8))")
        try files.createDirectory(atPath: partial, withIntermediateDirectories: true)
        do {
            let copy = (partial as NSString).appendingPathComponent(databaseName)
            let takenAt = Date()
            var reading = Configuration()
            reading.busyMode = .timeout(30)
            let live = try DatabaseQueue(path: source, configuration: reading)
            let target = try DatabaseQueue(path: copy)
            // One step: the whole database inside one read transaction (a consistent snapshot).
            try live.backup(to: target)
            try live.close()
            let storeId = try target.read { db -> String in
                let check = try String.fetchAll(db, sql: "PRAGMA integrity_check")
                guard check == ["ok"] else { throw Failure("The copy failed its integrity check: \(check.prefix(3))") }
                return try String.fetchOne(db, sql: "SELECT store_id FROM store_identity WHERE id = 1") ?? ""
            }
            try target.close()
            let (count, bytes) = try copyTree(
                from: configuration.attachmentsDirectory, to: (partial as NSString).appendingPathComponent(attachmentsName))
            let legacySecret = (configuration.dataDirectory as NSString).appendingPathComponent("jwt-secret")
            if files.fileExists(atPath: legacySecret) {
                try files.copyItem(atPath: legacySecret, toPath: (partial as NSString).appendingPathComponent("jwt-secret"))
            }
            let manifest = Manifest(
                format: 1, takenAt: takenAt, storeId: storeId, attachmentFiles: count, attachmentBytes: bytes,
                databaseBytes: Int64((try? files.attributesOfItem(atPath: copy)[.size] as? NSNumber)??.int64Value ?? 0))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            try encoder.encode(manifest).write(to: URL(fileURLWithPath: (partial as NSString).appendingPathComponent(manifestName)))
            try files.moveItem(atPath: partial, toPath: destination)
            return manifest
        } catch {
            try? files.removeItem(atPath: partial)
            throw error
        }
    }

    /// Reads a backup's manifest (and so checks the folder is one).
    public static func manifest(of backup: String) throws -> Manifest {
        let path = (backup as NSString).appendingPathComponent(manifestName)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure("\(backup) is not a Parley backup (no \(manifestName))")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(Manifest.self, from: data)
    }

    /// Copies the backup at `backup` into the data directory of `configuration`, which must
    /// hold no database yet, and gives the data a new store identity; returns it.
    public static func restore(from backup: String, into configuration: SQLiteFiles) throws -> String {
        let files = FileManager.default
        _ = try manifest(of: backup)
        let copy = (backup as NSString).appendingPathComponent(databaseName)
        guard files.fileExists(atPath: copy) else { throw Failure("\(backup) has no \(databaseName)") }
        let target = configuration.databasePath
        for path in [target, target + "-wal"] where files.fileExists(atPath: path) {
            throw Failure("\(path) exists: restore into a new data directory (or move the old one away first)")
        }
        try files.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        let partial = target + ".restoring"
        try? files.removeItem(atPath: partial)
        try files.copyItem(atPath: copy, toPath: partial)
        do {
            let queue = try DatabaseQueue(path: partial)
            let storeId = StoreIdentity.make()
            try queue.write { db in
                let check = try String.fetchAll(db, sql: "PRAGMA integrity_check")
                guard check == ["ok"] else { throw Failure("The backup's database failed its integrity check: \(check.prefix(3))") }
                try db.execute(sql: "INSERT OR REPLACE INTO store_identity (id, store_id) VALUES (1, ?)", arguments: [storeId])
            }
            try queue.close()
            _ = try copyTree(
                from: (backup as NSString).appendingPathComponent(attachmentsName), to: configuration.attachmentsDirectory,
                keepingExisting: true)
            let legacySecret = (backup as NSString).appendingPathComponent("jwt-secret")
            let secretTarget = (configuration.dataDirectory as NSString).appendingPathComponent("jwt-secret")
            if files.fileExists(atPath: legacySecret), !files.fileExists(atPath: secretTarget) {
                try files.copyItem(atPath: legacySecret, toPath: secretTarget)
            }
            // Last: the database appears whole, or not at all.
            try files.moveItem(atPath: partial, toPath: target)
            return storeId
        } catch {
            try? files.removeItem(atPath: partial)
            throw error
        }
    }

    /// Copies the files under `source` (none when it does not exist) into `target`, leaving out
    /// temporary files of uploads being written; a file removed while the copy runs is skipped.
    static func copyTree(from source: String, to target: String, keepingExisting: Bool = false) throws -> (files: Int, bytes: Int64) {
        let files = FileManager.default
        try files.createDirectory(atPath: target, withIntermediateDirectories: true)
        guard let walker = files.enumerator(atPath: source) else { return (0, 0) }
        var count = 0
        var bytes: Int64 = 0
        while let relative = walker.nextObject() as? String {
            let from = (source as NSString).appendingPathComponent(relative)
            let to = (target as NSString).appendingPathComponent(relative)
            var isDirectory: ObjCBool = false
            guard files.fileExists(atPath: from, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                try files.createDirectory(atPath: to, withIntermediateDirectories: true)
                continue
            }
            if (relative as NSString).lastPathComponent.hasPrefix("tmp-") { continue }
            if keepingExisting, files.fileExists(atPath: to) { continue }
            do {
                try files.copyItem(atPath: from, toPath: to)
            } catch where !files.fileExists(atPath: from) {
                continue
            }
            count += 1
            bytes += Int64((try? files.attributesOfItem(atPath: to)[.size] as? NSNumber)??.int64Value ?? 0)
        }
        return (count, bytes)
    }
}
