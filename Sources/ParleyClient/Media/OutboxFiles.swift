import Foundation

/// The SDK's own copies of files waiting to be sent.
///
/// A picked file's URL is not the SDK's to keep: a document picker's copy lives in a folder
/// the system empties right after the pick, and a file read through a security scope is
/// readable only while the scope is open. The outbox uploads later (after a restart too), so a
/// file is copied here when its message is queued, one folder per message named by its client
/// message id, and removed once the server has the message (or the user discards it).
///
/// The folder sits beside the database, in Application Support on Apple platforms (never
/// Caches, which iOS purges), with a protection class that lets a background upload read it
/// after the first unlock. It is backed up with the database: a restored outbox finds its files
/// (the media cache, which can be downloaded again, is what backups skip).
struct OutboxFiles: Sendable {
    /// The folder holding one subfolder per queued file.
    let directory: URL

    /// A copy of `file` that lasts until ``release(clientMessageId:)``: a file already here is
    /// moved into the message's folder, any other is copied.
    func stage(_ file: URL, for clientMessageId: String) throws -> URL {
        let folder = directory.appendingPathComponent(Self.folderName(clientMessageId), isDirectory: true)
        let target = folder.appendingPathComponent(Self.safeName(file.lastPathComponent))
        if file.standardizedFileURL.path == target.standardizedFileURL.path { return target }
        try prepare(folder)
        if FileManager.default.fileExists(atPath: target.path) { try FileManager.default.removeItem(at: target) }
        if contains(file) {
            try FileManager.default.moveItem(at: file, to: target)
            try? FileManager.default.removeItem(at: file.deletingLastPathComponent())
        } else {
            try FileManager.default.copyItem(at: file, to: target)
        }
        return target
    }

    /// Copies a file before a message exists for it (inside a picker's callback, while its
    /// security scope is open); ``stage(_:for:)`` moves it into the message's folder later.
    func pick(_ file: URL) throws -> URL {
        let folder = directory.appendingPathComponent("picked-\(UUID().uuidString.lowercased())", isDirectory: true)
        try prepare(folder)
        let target = folder.appendingPathComponent(Self.safeName(file.lastPathComponent))
        try FileManager.default.copyItem(at: file, to: target)
        return target
    }

    /// Whether `file` is one of these copies.
    func contains(_ file: URL) -> Bool {
        file.standardizedFileURL.path.hasPrefix(directory.standardizedFileURL.path + "/")
    }

    /// Removes the message's copy (the server has it, or it will never be sent).
    func release(clientMessageId: String) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(Self.folderName(clientMessageId), isDirectory: true))
    }

    /// Removes copies no queued message needs: folders of messages no longer in the outbox, and
    /// picks never sent that are older than `staleAfter` (a crash between the pick and the send).
    func sweep(keeping clientMessageIds: Set<String>, now: Date, staleAfter: TimeInterval = 3600) {
        let keep = Set(clientMessageIds.map(Self.folderName))
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where !keep.contains(name) {
            let folder = directory.appendingPathComponent(name, isDirectory: true)
            if name.hasPrefix("picked-") {
                let modified = (try? FileManager.default.attributesOfItem(atPath: folder.path)[.modificationDate] as? Date) ?? nil
                guard let modified, now.timeIntervalSince(modified) > staleAfter else { continue }
            }
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// Removes every copy (sign-out).
    func purge() { try? FileManager.default.removeItem(at: directory) }

    private func prepare(_ folder: URL) throws {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true,
            attributes: [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication])
        #else
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #endif
    }

    /// A folder name from a client message id: anything but letters, digits, `-` and `_`
    /// becomes `_`, so an id can never climb out of the folder.
    static func folderName(_ clientMessageId: String) -> String {
        "m-" + String(clientMessageId.unicodeScalars.map { scalar -> Character in
            CharacterSet.alphanumerics.contains(scalar) && scalar.isASCII || scalar == "-" || scalar == "_" ? Character(scalar) : "_"
        })
    }

    /// A file name without path separators or a leading dot.
    static func safeName(_ name: String) -> String {
        let cleaned = name.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "\0", with: "_")
        guard !cleaned.isEmpty, cleaned != ".", cleaned != ".." else { return "file" }
        return cleaned.hasPrefix(".") ? "_" + cleaned.dropFirst() : cleaned
    }
}
