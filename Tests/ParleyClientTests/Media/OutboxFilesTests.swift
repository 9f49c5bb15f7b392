import Foundation
@testable import ParleyClient
import Testing

/// The SDK's copies of files waiting to be sent: a pick is copied while it is readable and
/// moved (not copied again) into its message's folder; the user's original is never touched;
/// a sweep removes only what no queued message needs, sparing a pick made a moment ago.
@Suite struct OutboxFilesTests {
    /// An outbox folder and a separate "Downloads" folder with a file the user picks.
    struct Disk {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-files-\(UUID().uuidString)")
        var files: OutboxFiles { OutboxFiles(directory: root.appendingPathComponent("outbox")) }

        func original(_ name: String, _ text: String) throws -> URL {
            let url = root.appendingPathComponent("Downloads").appendingPathComponent(name)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
            return url
        }

        func folders() -> Set<String> {
            Set((try? FileManager.default.contentsOfDirectory(atPath: files.directory.path)) ?? [])
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    @Test func aPickIsMovedIntoItsMessagesFolderAndTheOriginalStays() throws {
        let disk = Disk()
        defer { disk.remove() }
        let original = try disk.original("Résumé 2026.pdf", "cv")
        let picked = try disk.files.pick(original)
        #expect(disk.files.contains(picked) && picked.lastPathComponent == "Résumé 2026.pdf")
        #expect(disk.folders().count == 1 && disk.folders().first?.hasPrefix("picked-") == true)
        let staged = try disk.files.stage(picked, for: "msg-1")
        #expect(staged.path.hasSuffix("/m-msg-1/Résumé 2026.pdf"))
        #expect(try String(contentsOf: staged, encoding: .utf8) == "cv")
        #expect(disk.folders() == ["m-msg-1"], "the picked folder went with its file")
        #expect(FileManager.default.fileExists(atPath: original.path), "the user's file is theirs")
        // Staging the staged copy again (a relaunch re-running the step) changes nothing.
        #expect(try disk.files.stage(staged, for: "msg-1") == staged)
        #expect(try String(contentsOf: staged, encoding: .utf8) == "cv")
    }

    /// A file outside the outbox is copied; staging another version under the same message
    /// replaces the first (an edit before the send), never keeping two.
    @Test func anOutsideFileIsCopiedAndAReStageReplaces() throws {
        let disk = Disk()
        defer { disk.remove() }
        let first = try disk.files.stage(try disk.original("notes.txt", "v1"), for: "m")
        let second = try disk.files.stage(try disk.original("notes.txt", "v2"), for: "m")
        #expect(first == second)
        #expect(try String(contentsOf: second, encoding: .utf8) == "v2")
        #expect(try FileManager.default.contentsOfDirectory(atPath: second.deletingLastPathComponent().path) == ["notes.txt"])
        #expect(FileManager.default.fileExists(atPath: disk.root.appendingPathComponent("Downloads/notes.txt").path))
        disk.files.release(clientMessageId: "m")
        disk.files.release(clientMessageId: "m")
        #expect(disk.folders().isEmpty)
    }

    /// Folders of messages still queued stay; folders of sent or discarded ones go; picks stay
    /// for an hour (the message may be about to be queued), then go.
    @Test func aSweepKeepsQueuedFoldersAndRecentPicks() throws {
        let disk = Disk()
        defer { disk.remove() }
        for id in ["queued", "sent", "discarded"] { _ = try disk.files.stage(try disk.original("\(id).txt", id), for: id) }
        let pick = try disk.files.pick(try disk.original("photo.jpg", "jpeg"))
        let pickFolder = pick.deletingLastPathComponent().lastPathComponent
        disk.files.sweep(keeping: ["queued"], now: Date())
        #expect(disk.folders() == ["m-queued", pickFolder])
        disk.files.sweep(keeping: ["queued"], now: Date().addingTimeInterval(59 * 60))
        #expect(disk.folders().contains(pickFolder), "59 minutes: still fresh")
        disk.files.sweep(keeping: ["queued"], now: Date().addingTimeInterval(2 * 3600))
        #expect(disk.folders() == ["m-queued"], "a pick never sent, from a crash long ago")
        disk.files.sweep(keeping: [], now: Date())
        #expect(disk.folders().isEmpty)
        // No folder at all (nothing was ever queued): nothing to do, no error.
        OutboxFiles(directory: disk.root.appendingPathComponent("never")).sweep(keeping: ["x"], now: Date())
    }

    /// Ids and names from anywhere (an app's own ids, a file named by another system) stay
    /// inside the folder and name one file.
    @Test(arguments: [
        ("plain-id_1", "m-plain-id_1"), ("a/b", "m-a_b"), ("..", "m-__"), ("ü😀", "m-__"), ("x y\tz", "m-x_y_z"), ("", "m-"),
    ])
    func folderNamesUseOnlySafeCharacters(id: String, folder: String) {
        #expect(OutboxFiles.folderName(id) == folder)
    }

    @Test func fileNamesCannotClimbOrHide() {
        #expect(OutboxFiles.safeName("") == "file")
        #expect(OutboxFiles.safeName(".") == "file")
        let climbing = OutboxFiles.safeName("../../x")
        #expect(!climbing.contains("/") && !climbing.hasPrefix("."), "\(climbing)")
        #expect(OutboxFiles.safeName("a\0b.txt") == "a_b.txt")
        #expect(OutboxFiles.safeName(".env") == "_env")
        #expect(OutboxFiles.safeName("Fotó 🌅.heic") == "Fotó 🌅.heic", "ordinary names are kept as they are")
    }

    @Test func purgeRemovesEveryCopy() throws {
        let disk = Disk()
        defer { disk.remove() }
        _ = try disk.files.stage(try disk.original("a.txt", "a"), for: "a")
        _ = try disk.files.pick(try disk.original("b.txt", "b"))
        disk.files.purge()
        #expect(!FileManager.default.fileExists(atPath: disk.files.directory.path))
        #expect(FileManager.default.fileExists(atPath: disk.root.appendingPathComponent("Downloads/a.txt").path))
    }
}
