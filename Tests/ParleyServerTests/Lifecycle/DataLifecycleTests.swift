import Foundation
import Synchronization
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// Retention, erasure and export from outside, on every available store: what
/// they remove is looked for afterwards in the API, the search index, the attachment store and,
/// on SQLite, the database files themselves.
@Suite struct DataLifecycleTests {
    /// A word no other text contains, one token for the search index.
    private func marker(_ what: String) -> String { "zq\(what)\(UUID().uuidString.replacing("-", with: "").lowercased())" }

    /// Uploads `bytes` as a file and returns the attachment.
    private func upload(_ server: TestServer, _ user: TestUser, _ bytes: Data, name: String) async throws -> ParleyProtocol.Attachment {
        let answer = try await server.raw(
            "POST", "attachments?name=\(name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name)", token: user.token, body: bytes, headers: ["Content-Type": "application/octet-stream"])
        #expect(answer.status == 201)
        return try WireCoding.makeDecoder().decode(ParleyProtocol.Attachment.self, from: answer.body)
    }

    /// The files under the data directory (the SQLite database and its log, the attachment
    /// files) that hold `text`'s bytes.
    private func filesHolding(_ server: TestServer, _ text: String) -> [String] {
        let needle = Data(text.utf8)
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: server.dataDirectory)
        while let name = enumerator?.nextObject() as? String {
            let path = (server.dataDirectory as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            if data.range(of: needle) != nil { found.append(name) }
        }
        return found
    }

    /// Where the store keeps an attachment's bytes (checked to be there first).
    private func blobName(_ server: TestServer, _ attachment: ParleyProtocol.Attachment) async throws -> String {
        let stored = try #require(try await server.app.store.reading { tx in try await tx.attachment(attachment.id) })
        let name = BlobName.content(stored.sha256)
        #expect(try await server.app.lifecycle.blobs.length(of: name) == attachment.size)
        return name
    }

    private func errorStatus(_ call: () async throws -> some Any) async -> Int? {
        do {
            _ = try await call()
            return nil
        } catch {
            return (error as? ClientError)?.httpStatus
        }
    }

    // MARK: Retention

    @Test(arguments: StoreKind.available)
    func retentionDeletesOldMessagesAndTheirFilesEverywhere(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let alice = try await server.register("alice@x.io")
            let bob = try await server.register("bob@x.io")
            let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Team"))
            let secret = marker("retention")
            let fileBytes = Data((marker("bytes") + String(repeating: "x", count: 5000)).utf8)
            let file = try await upload(server, bob, fileBytes, name: "notes.bin")
            let blob = try await blobName(server, file)
            let text = try await bob.api.send(.init(clientMessageId: "t", text: "the plan is \(secret)"), to: group.id)
            let withFile = try await bob.api.send(
                .init(clientMessageId: "f", text: "", type: .file, attachmentId: file.id), to: group.id)
            // Another organization without a retention keeps everything.
            let other = try await server.register("olga@y.io", organization: "other")
            let otherGroup = try await other.api.createConversation(.init(type: .group, participantIds: [], name: "Mine"))
            let kept = try await other.api.send(.init(clientMessageId: "k", text: "kept \(secret)"), to: otherGroup.id)
            // Only admins set it, to at least a day.
            #expect(await errorStatus { try await bob.api.setMessageRetention(days: 1) } == 403)
            #expect(await errorStatus { try await alice.api.setMessageRetention(days: 0) } == 400)
            #expect(try await alice.api.setMessageRetention(days: 1).messageRetentionDays == 1)
            #expect(try await alice.api.organization().messageRetentionDays == 1)
            let aliceEvents = EventRecorder(try await alice.connect())
            // Today nothing is old enough.
            #expect(try await server.app.lifecycle.sweepRetention(now: Date()) == 0)
            // Two days on, both of bob's messages go, as a sender's delete would.
            #expect(try await server.app.lifecycle.sweepRetention(now: Date().addingTimeInterval(2 * 86_400)) == 2)
            let history = try await alice.api.messages(group.id).messages
            #expect(history.count == 2 && history.allSatisfy { $0.deletedAt != nil && $0.text.isEmpty && $0.attachment == nil })
            #expect(history.allSatisfy { $0.deletedBy == nil && $0.updatedSeq > withFile.seq })
            #expect(try await alice.api.conversation(group.id).lastSeq == withFile.seq + 2)
            try await aliceEvents.wait("both tombstones") { events in
                Set(events.compactMap { if case .messageUpdated(let e) = $0, e.message.deletedAt != nil { e.message.id } else { nil } })
                    == [text.id, withFile.id]
            }
            // Gone from search, from the attachment store, and (SQLite) from the files.
            #expect(try await alice.api.search(secret).results.isEmpty)
            #expect(try await server.raw("GET", "attachments/\(file.id)", token: bob.token).status == 404)
            #expect(try await server.app.lifecycle.blobs.length(of: blob) == nil)
            if kind == .sqlite {
                #expect(filesHolding(server, "the plan is").isEmpty, "\(filesHolding(server, "the plan is"))")
                #expect(filesHolding(server, String(decoding: fileBytes.prefix(40), as: UTF8.self)).isEmpty, "\(filesHolding(server, String(decoding: fileBytes.prefix(40), as: UTF8.self)))")
            }
            // The other organization's message is untouched, and still found.
            #expect(try await other.api.messages(otherGroup.id).messages.first?.text == kept.text)
            #expect(try await other.api.search(secret).results.count == 1)
            // A second sweep finds nothing more; retention off is on record.
            #expect(try await server.app.lifecycle.sweepRetention(now: Date().addingTimeInterval(3 * 86_400)) == 0)
            #expect(try await alice.api.setMessageRetention(days: nil).messageRetentionDays == nil)
            let actions = try await alice.api.auditLog().entries.map(\.action)
            #expect(actions.prefix(2) == ["retention.changed", "retention.changed"])
        }
    }

    // MARK: Erasure

    @Test(arguments: StoreKind.available)
    func anErasedUsersWordsAndFilesAreFoundNowhere(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let alice = try await server.register("alice@x.io")
            let bob = try await server.register("bob@x.io")
            let carol = try await server.register("carol@x.io")
            let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Team"))
            let words = marker("erased")
            let fileBytes = Data((marker("filebytes") + String(repeating: "y", count: 3000)).utf8)
            let file = try await upload(server, bob, fileBytes, name: "cv.bin")
            let blob = try await blobName(server, file)
            let said = try await bob.api.send(.init(clientMessageId: "b1", text: "my address is \(words)"), to: group.id)
            _ = try await bob.api.send(.init(clientMessageId: "b2", text: "", type: .file, attachmentId: file.id), to: group.id)
            // Alice forwards bob's words: the copy is his words too.
            let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
            let forward = try await alice.api.send(.init(clientMessageId: "fw", text: "", forwardOf: said.id), to: direct.id)
            #expect(forward.text.contains(words))
            let alicesOwn = try await alice.api.send(.init(clientMessageId: "a1", text: "alice stays"), to: group.id)
            let bobSocket = try await bob.connect()
            // A wrong password, or the organization's last admin, is refused.
            #expect(await errorStatus { try await bob.api.eraseAccount(password: "not it") } == 403)
            #expect(await errorStatus { try await alice.api.eraseAccount(password: TestUser.password) } == 409)
            try await bob.api.eraseAccount(password: TestUser.password)
            // Bob's tokens are refused from now on; his open WebSocket is closed.
            #expect(await errorStatus { try await bob.api.me() } == 401)
            try await waitFor("bob's socket to close") { await bobSocket.closeCode != nil }
            // His messages and the forward are tombstones; everyone else's stay.
            let history = try await alice.api.messages(group.id).messages
            #expect(history.filter { $0.senderId == bob.id }.allSatisfy { $0.deletedAt != nil && $0.text.isEmpty && $0.attachment == nil })
            #expect(history.first { $0.id == alicesOwn.id }?.text == "alice stays")
            #expect(try await alice.api.messages(direct.id).messages.first { $0.id == forward.id }?.deletedAt != nil)
            #expect(try await alice.api.conversation(group.id).participantIds.contains(bob.id), "conversations stay")
            // His profile is empty, and he is no longer listed.
            #expect(try await server.app.store.credentials(organization: "acme", email: "bob@x.io") == nil)
            #expect(try await alice.api.users().allSatisfy { $0.id != bob.id })
            // Nowhere to be found: search, attachments, files.
            #expect(try await alice.api.search(words).results.isEmpty)
            #expect(try await carol.api.search(words).results.isEmpty)
            #expect(try await server.raw("GET", "attachments/\(file.id)", token: alice.token).status == 404)
            #expect(try await server.app.lifecycle.blobs.length(of: blob) == nil)
            if kind == .sqlite {
                #expect(filesHolding(server, words).isEmpty, "\(filesHolding(server, words))")
                #expect(filesHolding(server, "bob@x.io").isEmpty, "\(filesHolding(server, "bob@x.io"))")
                #expect(filesHolding(server, String(decoding: fileBytes.prefix(40), as: UTF8.self)).isEmpty, "\(filesHolding(server, String(decoding: fileBytes.prefix(40), as: UTF8.self)))")
            }
            // An admin erases a member; members may not; on record.
            #expect(await errorStatus { try await carol.api.erase(alice.id) } == 403)
            try await alice.api.erase(carol.id)
            #expect(await errorStatus { try await carol.api.me() } == 401)
            let erased = try await alice.api.auditLog().entries.first
            #expect(erased?.action == "user.erased" && erased?.targetId == carol.id.description)
        }
    }

    // MARK: Export

    @Test(.needs("unzip"), arguments: StoreKind.available)
    func anExportIsAZipOfWhatTheUserSentAndUploaded(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let alice = try await server.register("alice@x.io")
            let bob = try await server.register("bob@x.io", name: "Bob Builder")
            let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Team ☕"))
            let fileBytes = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let file = try await upload(server, bob, fileBytes, name: "plan: \"v2\"?.bin")
            var sent: [String] = []
            for n in 0..<3 {
                let text = n == 1 ? "naïve — \"quoted\"\nline \(n)" : "message \(n)"
                sent.append(try await bob.api.send(.init(clientMessageId: "m\(n)", text: text), to: group.id).text)
            }
            _ = try await bob.api.send(.init(clientMessageId: "f", text: "the plan", type: .file, attachmentId: file.id), to: group.id)
            _ = try await alice.api.send(.init(clientMessageId: "a", text: "not bob's"), to: group.id)
            let zip = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("export.zip")
            try FileManager.default.createDirectory(at: zip.deletingLastPathComponent(), withIntermediateDirectories: true)
            let progress = ProgressRecorder()
            let size = try await bob.api.exportData(to: zip) { progress.record($0) }
            #expect(size > Int64(fileBytes.count) && progress.last == size)
            // unzip checks every entry's CRC and lists the names.
            let test = try await runTool("/usr/bin/env", ["unzip", "-t", zip.path])
            #expect(test.status == 0, "\(test.output)")
            let list = try await runTool("/usr/bin/env", ["unzip", "-Z1", zip.path]).output.split(separator: "\n").map(String.init)
            let attachmentName = try #require(list.first { $0.hasPrefix("attachments/") })
            #expect(list.prefix(3) == ["profile.json", "conversations.json", "messages.json"] && list.count == 4)
            #expect(attachmentName.hasSuffix("-plan_ _v2__.bin"), "a name safe on every system: \(attachmentName)")
            func entry(_ name: String) async throws -> Data {
                try await runToolData("/usr/bin/env", ["unzip", "-p", zip.path, name]).output
            }
            let decoder = WireCoding.makeDecoder()
            #expect(try decoder.decode(User.self, from: try await entry("profile.json")).email == "bob@x.io")
            let messages = try decoder.decode([Message].self, from: try await entry("messages.json"))
            #expect(messages.map(\.text) == sent + ["the plan"] && messages.allSatisfy { $0.senderId == bob.id })
            let conversations = try JSONSerialization.jsonObject(with: try await entry("conversations.json")) as? [[String: Any]]
            #expect(conversations?.first?["name"] as? String == "Team ☕")
            #expect(Set(conversations?.first?["participantIds"] as? [String] ?? []) == [alice.id.description, bob.id.description])
            #expect(try await runToolData("/usr/bin/env", ["unzip", "-p", zip.path, attachmentName]).output == fileBytes)
            // Someone else's export holds none of bob's messages.
            let aliceZip = zip.deletingLastPathComponent().appendingPathComponent("alice.zip")
            try await alice.api.exportData(to: aliceZip)
            let aliceMessages = try decoder.decode(
                [Message].self, from: try await runToolData("/usr/bin/env", ["unzip", "-p", aliceZip.path, "messages.json"]).output)
            #expect(aliceMessages.map(\.text) == ["not bob's"])
        }
    }
}

/// The progress values a download reported.
private final class ProgressRecorder: Sendable {
    private let values = Mutex<[Int64]>([])
    func record(_ value: Int64) { values.withLock { $0.append(value) } }
    var last: Int64? { values.withLock { $0.last } }
}

/// Runs a tool to its end, off the test pool; its exit status and standard output as text.
private func runTool(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    let (status, data) = try await runToolData(path, arguments)
    return (status, String(decoding: data, as: UTF8.self))
}

/// Runs a tool to its end, off the test pool; its exit status and standard output as bytes.
private func runToolData(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: Data) {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: path)
                process.arguments = arguments
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = FileHandle.nullDevice
                try process.run()
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return (process.terminationStatus, data)
            })
        }
    }
}
