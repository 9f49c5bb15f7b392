import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// `SQLiteBackup` on real files: a backup of a store that is open (its last commits still in
/// the write-ahead log) restores every committed message with gapless seqs and a new store
/// identity; refused backups and restores leave nothing half-written and never touch an
/// existing database.
@Suite struct SQLiteBackupTests {
    /// A data directory laid out as a server's: the database and the attachments folder.
    static func dataDirectory() -> SQLiteFiles {
        let directory = TestServer.temporaryDirectory()
        return SQLiteFiles(
            dataDirectory: directory, databasePath: (directory as NSString).appendingPathComponent("parley.sqlite"),
            attachmentsDirectory: (directory as NSString).appendingPathComponent("attachments"))
    }

    static func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    static func text(at path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Leftovers of a backup built beside `destination` and not renamed into place.
    static func partials(beside destination: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: (destination as NSString).deletingLastPathComponent).filter { $0.contains(".partial-") }
    }

    @Test func aBackupOfAnOpenStoreRestoresEveryCommittedMessage() async throws {
        let source = Self.dataDirectory()
        let store = try SQLiteStore(path: source.databasePath)
        let alice = try await register(store, "alice@x.io")
        let bob = try await register(store, "bob@x.io")
        let direct = try await createDirect(store, alice, bob)
        for index in 0..<40 { _ = try await send(store, direct.id, index.isMultiple(of: 2) ? alice : bob, "message \(index) ✓") }
        _ = try await store.markRead(conversationId: direct.id, userId: bob.id, upToSeq: 25, messageIds: nil)
        let identity = try await store.storeIdentity()
        let attachments = source.attachmentsDirectory
        try Self.write("photo bytes", to: "\(attachments)/ab/abcdef")
        try Self.write("document", to: "\(attachments)/cd/cdef01")
        try Self.write("half an upload", to: "\(attachments)/tmp-\(UUID())")  // being written: left out
        try Self.write("legacy", to: "\(source.dataDirectory)/jwt-secret")

        let destination = TestServer.temporaryDirectory() + "/backup"
        let manifest = try SQLiteBackup.backup(source, to: destination)
        // Sent after the backup began: not in it.
        _ = try await send(store, direct.id, alice, "after the backup")
        try await store.close()

        #expect(manifest.format == 1 && manifest.storeId == identity)
        #expect(manifest.attachmentFiles == 2 && manifest.attachmentBytes == Int64("photo bytes".utf8.count + "document".utf8.count))
        #expect(manifest.databaseBytes > 0)
        let reread = try SQLiteBackup.manifest(of: destination)
        #expect(reread.storeId == identity && reread.attachmentFiles == 2 && abs(reread.takenAt.timeIntervalSince(manifest.takenAt)) < 1)
        #expect(try Self.partials(beside: destination).isEmpty)

        let target = Self.dataDirectory()
        let renewed = try SQLiteBackup.restore(from: destination, into: target)
        #expect(renewed != identity && renewed.count == 32)
        #expect(Self.text(at: "\(target.attachmentsDirectory)/ab/abcdef") == "photo bytes")
        #expect(Self.text(at: "\(target.attachmentsDirectory)/cd/cdef01") == "document")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.attachmentsDirectory).allSatisfy { !$0.hasPrefix("tmp-") })
        #expect(Self.text(at: "\(target.dataDirectory)/jwt-secret") == "legacy")

        let restored = try SQLiteStore(path: target.databasePath)
        do {
            #expect(try await restored.storeIdentity() == renewed)
            let page = try await restored.messages(conversationId: direct.id, viewer: bob.id, before: nil, after: nil, limit: 100)
            #expect(page.messages.map(\.seq) == Array(1...40))
            #expect(page.messages.last?.text == "message 39 ✓")
            let view = try #require(try await restored.conversation(id: direct.id, viewer: bob.id))
            #expect(view.lastSeq == 40 && view.readSeq == 25 && view.unreadCount == 7)
            // The restored server goes on from the copy's counter: no gap, no reused seq inside it.
            #expect(try await send(restored, direct.id, bob, "after the restore").seq == 41)
            #expect(try await restored.credentials(organization: "acme", email: "alice@x.io")?.user == alice)
        } catch {
            try? await restored.close()
            throw error
        }
        try await restored.close()
    }

    @Test func aRefusedBackupLeavesNoFolderBehind() async throws {
        let source = Self.dataDirectory()
        let missing = TestServer.temporaryDirectory() + "/backup"
        #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.backup(source, to: missing) }
        #expect(!FileManager.default.fileExists(atPath: missing))

        let store = try SQLiteStore(path: source.databasePath)
        _ = try await register(store, "alice@x.io")
        // A destination that holds something is never written into.
        let occupied = TestServer.temporaryDirectory()
        try Self.write("mine", to: "\(occupied)/notes.txt")
        #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.backup(source, to: occupied) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: occupied) == ["notes.txt"])
        #expect(try Self.partials(beside: occupied).isEmpty)
        // An empty folder is fine: the backup takes its place.
        let empty = TestServer.temporaryDirectory()
        let manifest = try SQLiteBackup.backup(source, to: empty)
        #expect(manifest.attachmentFiles == 0 && manifest.attachmentBytes == 0)
        #expect(FileManager.default.fileExists(atPath: "\(empty)/parley.sqlite"))
        try await store.close()
    }

    @Test func aRestoreNeverReplacesAnExistingDatabase() async throws {
        let source = Self.dataDirectory()
        let store = try SQLiteStore(path: source.databasePath)
        _ = try await register(store, "alice@x.io")
        try await store.close()
        let backup = TestServer.temporaryDirectory() + "/backup"
        _ = try SQLiteBackup.backup(source, to: backup)

        // A data directory in use, by its database or only its log.
        let inUse = Self.dataDirectory()
        try Self.write("precious", to: inUse.databasePath)
        #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.restore(from: backup, into: inUse) }
        #expect(Self.text(at: inUse.databasePath) == "precious")
        let walOnly = Self.dataDirectory()
        try Self.write("log", to: walOnly.databasePath + "-wal")
        #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.restore(from: backup, into: walOnly) }
        #expect(!FileManager.default.fileExists(atPath: walOnly.databasePath))

        // Folders that are not backups: no manifest, or a manifest without its database.
        let notABackup = TestServer.temporaryDirectory()
        let fresh = Self.dataDirectory()
        #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.restore(from: notABackup, into: fresh) }
        try FileManager.default.copyItem(atPath: "\(backup)/backup.json", toPath: "\(notABackup)/backup.json")
        #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.restore(from: notABackup, into: fresh) }
        #expect(!FileManager.default.fileExists(atPath: fresh.databasePath))
        #expect(!FileManager.default.fileExists(atPath: fresh.databasePath + ".restoring"))
    }

    @Test func aRestoreKeepsFilesAndTheSecretAlreadyInTheTarget() async throws {
        let source = Self.dataDirectory()
        let store = try SQLiteStore(path: source.databasePath)
        let identity = try await store.storeIdentity()
        try await store.close()
        try Self.write("from backup", to: "\(source.attachmentsDirectory)/ab/ab01")
        try Self.write("only in backup", to: "\(source.attachmentsDirectory)/ef/ef02")
        try Self.write("backup secret", to: "\(source.dataDirectory)/jwt-secret")
        let backup = TestServer.temporaryDirectory() + "/backup"
        _ = try SQLiteBackup.backup(source, to: backup)

        // A target that already has some content (shared attachments) and its own secret.
        let target = Self.dataDirectory()
        try Self.write("already here", to: "\(target.attachmentsDirectory)/ab/ab01")
        try Self.write("target secret", to: "\(target.dataDirectory)/jwt-secret")
        let renewed = try SQLiteBackup.restore(from: backup, into: target)
        #expect(renewed != identity)
        #expect(Self.text(at: "\(target.attachmentsDirectory)/ab/ab01") == "already here")
        #expect(Self.text(at: "\(target.attachmentsDirectory)/ef/ef02") == "only in backup")
        #expect(Self.text(at: "\(target.dataDirectory)/jwt-secret") == "target secret")
        // Two restores of one backup are two copies: each its own identity.
        let again = Self.dataDirectory()
        let second = try SQLiteBackup.restore(from: backup, into: again)
        #expect(second != renewed && second != identity)
        // The backup itself is left as it was: its database still says the old identity.
        let backupStore = try SQLiteStore(path: "\(backup)/parley.sqlite")
        #expect(try await backupStore.storeIdentity() == identity)
        try await backupStore.close()
    }
}
