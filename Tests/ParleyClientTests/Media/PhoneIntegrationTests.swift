import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// What an iOS app relies on, checked on Linux: files to send kept in the SDK's own storage,
/// push decided by plain rules and a tap that opens its conversation (from a cold start too),
/// errors a person can read in their language, and pictures sized before they go.
@MainActor @Suite struct PhoneIntegrationTests {
    /// A real picture (the server checks that an image is what it says).
    static let onePixelPNG = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==") ?? Data()

    nonisolated static func folderContents(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    // MARK: Files to send

    /// The ready-made screens' model sends a text and two files whose
    /// picked folders are emptied right after the pick (one kept inside the picker's callback,
    /// one handed to `send` directly); the server has all three, byte for byte, and the SDK's
    /// copies are gone once it has them.
    @Test func filesWhosePickedFolderIsEmptiedRightAwayStillArrive() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (_, bob, direct) = try await server.directPair()
        let folder = TestServer.temporaryDirectory()
        let session = ChatSession(server: server.baseURL, store: FileSessionStore(path: folder + "/session.json"), databaseDirectory: folder + "/db")
        await session.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)
        let chat = try #require(session.chat(direct.id))
        await chat.start()
        await chat.send("a text first")

        // Picked, kept inside the callback, the picker's folder emptied, then sent.
        let picked = URL(fileURLWithPath: folder + "/picker-1/report.pdf")
        try FileManager.default.createDirectory(at: picked.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 0x25, count: 700_000).write(to: picked)
        let kept = try #require(chat.keepFile(picked))
        try FileManager.default.removeItem(at: picked.deletingLastPathComponent())
        await chat.send(file: kept, contentType: "application/pdf", type: .file)

        // Handed to send directly; the folder goes the moment send returns.
        let direct2 = URL(fileURLWithPath: folder + "/picker-2/photo.png")
        try FileManager.default.createDirectory(at: direct2.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.onePixelPNG.write(to: direct2)
        await chat.send(file: direct2, contentType: "image/png", type: .image, caption: "look")
        try FileManager.default.removeItem(at: direct2.deletingLastPathComponent())
        #expect(chat.lastError == nil, "\(chat.lastError ?? "")")

        try await waitFor("all three at Bob's") { try await bob.api.messages(direct.id).messages.count == 3 }
        let received = try await bob.api.messages(direct.id).messages
        #expect(received.map(\.text) == ["a text first", "", "look"])
        #expect(received.map { $0.attachment?.name } == [nil, "report.pdf", "photo.png"])
        #expect(try await bob.api.download(try #require(received[1].attachment).url) == Data(repeating: 0x25, count: 700_000))
        #expect(try await bob.api.download(try #require(received[2].attachment).url) == Self.onePixelPNG)
        let outbox = try #require(session.databasePath(for: session.user?.id)) + "-outbox"
        try await waitFor("the SDK's copies removed") { await MainActor.run { Self.folderContents(outbox).isEmpty } }
        chat.stop()
        await session.signOut()
        #expect(!FileManager.default.fileExists(atPath: outbox), "signing out removes the folder")
    }

    /// A file queued while the server is down, its original deleted, the app quit: the next
    /// launch uploads the SDK's copy and sends the message once; a leftover pick from a crash
    /// is swept when it is old, and kept while it may still be sent.
    @Test func aQueuedFileSurvivesARestartWithItsOriginalGone() async throws {
        let outage = try await ClientRecoveryTests.Outage.start()
        let (alice, bob, direct) = try await outage.server.directPair()
        let folder = TestServer.temporaryDirectory()
        let path = folder + "/alice.sqlite"
        // The phone's clock, for both launches: it stands still, so the failed upload's retry
        // waits; what sends the file is the next launch's flush. A pick counts as old by it.
        let clock = ManualClock()
        func client() throws -> ChatClient {
            let transport = LiveTransport(serverURL: alice.server.baseURL, token: alice.token)
            return ChatClient(
                transport: transport, database: try LocalDatabase.open(path: path), userId: alice.id,
                environment: AppLifecycleTests.environment(clock), policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)),
                hooks: MessageHooks(preparations: [ImageDownscaling(), AttachmentUpload(api: transport.api)]),
                outboxFilesDirectory: URL(fileURLWithPath: path + "-outbox", isDirectory: true))
        }
        let first = try client()
        _ = try await first.openConversation(direct.id)
        await outage.server.stop()
        let original = URL(fileURLWithPath: folder + "/picked/minutes.txt")
        try FileManager.default.createDirectory(at: original.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("minutes of the meeting".utf8).write(to: original)
        let pending = try await first.send(
            SendMessageRequest(clientMessageId: "", text: "", type: .file), in: direct.id,
            context: ["file": original.path, "contentType": "text/plain", "name": "minutes.txt"])
        try FileManager.default.removeItem(at: original.deletingLastPathComponent())
        // A pick that never became a message (the app crashed in between), and a fresh one.
        let stale = try first.keepFileForSending(try Self.scratch(folder, "stale.txt"))
        let fresh = try first.keepFileForSending(try Self.scratch(folder, "fresh.txt"))
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: stale.deletingLastPathComponent().path)
        await first.flushOutbox()
        await first.stop()
        #expect(pending.delivery == .sending)

        let again = try await outage.restart()
        defer { Task { await again.stop() } }
        let second = try client()
        await second.start()
        await second.flushOutbox()
        try await waitFor("the file at Bob's") { try await bob.api.messages(direct.id).messages.count == 1 }
        let received = try #require(try await bob.api.messages(direct.id).messages.first)
        #expect(try await bob.api.download(try #require(received.attachment).url) == Data("minutes of the meeting".utf8))
        try await waitFor("only the fresh pick left") {
            Self.folderContents(path + "-outbox") == [fresh.deletingLastPathComponent().lastPathComponent]
        }
        await second.stop()
    }

    static func scratch(_ folder: String, _ name: String) throws -> URL {
        let url = URL(fileURLWithPath: folder + "/scratch-\(UUID().uuidString)/\(name)")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(name.utf8).write(to: url)
        return url
    }

    /// A client message id or a file name cannot point the copy outside its folder.
    @Test func copiesStayInsideTheirFolder() throws {
        let root = URL(fileURLWithPath: TestServer.temporaryDirectory() + "/outbox", isDirectory: true)
        let files = OutboxFiles(directory: root)
        let staged = try files.stage(try Self.scratch(TestServer.temporaryDirectory(), "a.txt"), for: "../../etc")
        #expect(files.contains(staged) && staged.path.hasPrefix(root.path + "/m-______etc/"), "\(staged.path)")
        #expect(OutboxFiles.safeName("..") == "file" && OutboxFiles.safeName(".hidden") == "_hidden" && OutboxFiles.safeName("a/b") == "a_b")
        files.release(clientMessageId: "../../etc")
        #expect(Self.folderContents(root.path).isEmpty)
    }

    // MARK: Push

    /// Permission is asked once, with a reason (after a first message), never at launch and
    /// never after a denial; a device token is handed over whenever any permission is granted.
    @Test func whenToAskForNotifications() {
        #expect(!PushRules.shouldAskPermission(.notDetermined, signedIn: true, messagesSent: 0, alreadyAsked: false), "not at launch")
        #expect(PushRules.shouldAskPermission(.notDetermined, signedIn: true, messagesSent: 1, alreadyAsked: false))
        #expect(!PushRules.shouldAskPermission(.notDetermined, signedIn: false, messagesSent: 3, alreadyAsked: false))
        #expect(!PushRules.shouldAskPermission(.notDetermined, signedIn: true, messagesSent: 3, alreadyAsked: true))
        for answered in [PushRules.Permission.denied, .authorized, .provisional, .ephemeral] {
            #expect(!PushRules.shouldAskPermission(answered, signedIn: true, messagesSent: 5, alreadyAsked: false), "\(answered)")
        }
        #expect([PushRules.Permission.notDetermined, .denied, .authorized, .provisional, .ephemeral].map(PushRules.shouldRegister)
            == [false, false, true, true, true])
    }

    /// While the app is open: no banner for the conversation on screen or for one's own
    /// message from another device; a banner for any other; other notifications are the app's.
    @Test func foregroundNotificationsAndTheBadge() {
        let here = EntityID(), there = EntityID()
        let route = PushRoute(conversationId: there, messageId: EntityID())
        #expect(PushRules.foregroundPresentation(of: route, conversationOnScreen: there) == .none)
        #expect(PushRules.foregroundPresentation(of: route, conversationOnScreen: here) == .banner)
        #expect(PushRules.foregroundPresentation(of: route, conversationOnScreen: nil) == .banner)
        #expect(PushRules.foregroundPresentation(of: route, conversationOnScreen: nil, fromMe: true) == .none)
        #expect(PushRules.foregroundPresentation(of: nil, conversationOnScreen: there) == .notParley)
        #expect(PushRules.badge(unreadCounts: [3, 0, 2, -1]) == 5)
        #expect(PushRules.badge(unreadCounts: []) == 0)
        #expect(PushRules.badge(unreadCounts: [9_000, 9_000]) == 9_999)
        var pending = PendingRoute()
        #expect(pending.take(ready: true) == nil)
        pending.tapped(route)
        #expect(pending.take(ready: false) == nil && pending.isPending, "kept until the session is ready")
        #expect(pending.take(ready: true) == route)
        #expect(pending.take(ready: true) == nil, "followed once")
    }

    /// A tap that launches the app: the route arrives before anyone is signed in, waits, and
    /// opens its conversation (synced, the announced message there) once the stored session
    /// resumes; the badge counts the unread messages; the conversation on screen gets no banner.
    @Test func aTapFromAColdStartOpensItsConversation() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (_, bob, direct) = try await server.directPair()
        let folder = TestServer.temporaryDirectory()
        let store = FileSessionStore(path: folder + "/session.json")
        let first = ChatSession(server: server.baseURL, store: store, databaseDirectory: folder + "/db")
        await first.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)
        await first.client?.stop()

        let sent = try await bob.api.send(.init(clientMessageId: "b1", text: "are you there?"), to: direct.id)
        _ = try await bob.api.send(.init(clientMessageId: "b2", text: "ping"), to: direct.id)
        let userInfo: [String: String] = [
            "type": "chat_message", "conversationId": direct.id.description, "messageId": sent.id.description,
            "senderId": bob.id.description,
        ]
        let route = try #require(PushRoute(userInfo: userInfo))

        let launched = ChatSession(server: server.baseURL, store: store, databaseDirectory: folder + "/db")
        await launched.open(route)
        #expect(launched.selection == nil, "nobody signed in yet: the route waits")
        await launched.resume()
        #expect(launched.selection == direct.id)
        let chat = try #require(launched.chat(direct.id))
        await chat.start()
        #expect(chat.messages.map(\.text) == ["are you there?", "ping"])
        #expect(await launched.presentation(ofNotification: userInfo) == .none, "its chat is on screen")
        chat.stop()
        try await waitFor("a banner once the chat is closed") {
            await launched.presentation(ofNotification: userInfo) == .banner
        }
        #expect(await launched.presentation(ofNotification: ["aps": ["alert": "hi"]]) == .notParley)
        await launched.forget()
    }

    // MARK: Errors a person can read

    /// Every error the SDK can raise has a sentence in English and in French, from the String
    /// Catalog; none shows a code, a command or the server's raw text.
    @Test func everyErrorReadsAsASentenceInBothLanguages() {
        #expect(ParleyStrings.languages.isSuperset(of: ["en", "fr"]))
        var errors: [ClientError] = [
            ClientError(kind: .transport, message: "Cannot reach http://x: refused"),
            ClientError(kind: .timeout, message: "t"), ClientError(kind: .decoding, message: "d"),
            ClientError(kind: .disconnected, message: "c"), ClientError(kind: .server, message: "no code"),
        ]
        errors += ErrorCode.allCases.map { ClientError(kind: .server, code: $0, message: "forbidden: \($0.rawValue) raw") }
        let english = Locale(identifier: "en_GB"), french = Locale(identifier: "fr_FR")
        for error in errors {
            let en = error.localizedText(locale: english), fr = error.localizedText(locale: french)
            #expect(!en.hasPrefix("error.") && !fr.hasPrefix("error."), "a catalog key for \(error)")
            #expect(en != fr, "translated: \(error)")
            for text in [en, fr] {
                #expect(!text.contains("_") && !text.contains("/") && !text.contains("raw"), "\(text)")
                #expect(text.first?.isUppercase == true && (text.hasSuffix(".") || text.hasSuffix("?")), "\(text)")
            }
        }
        #expect(ClientError(kind: .transport, message: "x").localizedText(locale: french)
            == "Impossible de joindre le serveur. Vérifiez votre connexion et réessayez.")
        #expect(ClientError(kind: .server, code: .payloadTooLarge, message: "x").localizedText(locale: english)
            == "That file is too large to send.")
        #expect(ParleyStrings.text("error.offline", locale: Locale(identifier: "ja_JP"))
            == "Can't reach the server. Check your connection and try again.", "a language without texts falls back to English")
        // LocalizedError: what `error.localizedDescription` shows on a phone.
        let refused: any Error = ClientError(kind: .server, code: .forbidden, message: "not a participant")
        #expect(!refused.localizedDescription.contains("forbidden"))
        #expect((refused as? ClientError)?.failureReason == "not a participant")
    }

    /// A screen's sentence: the server's reason for a refused request follows in English; a
    /// hook's veto is its own reason; an unknown error is a general sentence, not a dump.
    @Test func readableSentencesForScreens() {
        let en = Locale(identifier: "en_US"), fr = Locale(identifier: "fr_FR")
        let invalid = ClientError(kind: .server, code: .invalidRequest, message: "a message is 1–4000 characters")
        #expect(ClientError.readable(invalid, locale: en) == "That can't be sent as it is. A message is 1–4000 characters.")
        #expect(ClientError.readable(invalid, locale: fr) == "Impossible d'envoyer cela tel quel.")
        #expect(ClientError.readable(SendVetoed(reason: "Links are not allowed here"), locale: en) == "Links are not allowed here")
        #expect(ClientError.readable(CocoaError(.fileReadNoSuchFile), locale: fr) == "Impossible de lire ce fichier.")
        struct Odd: Error {}
        #expect(ClientError.readable(Odd(), locale: en) == "Something went wrong. Try again.")
        #expect(ChatSession.describe(ClientError(kind: .server, code: .unauthorized, message: "bad"), locale: fr)
            == "Organisation, e-mail ou mot de passe incorrect.")
    }

    // MARK: Pictures

    /// Camera photos are scaled to 2048 px and re-encoded; small pictures, animations and
    /// drawings go as they are; HEIC always becomes JPEG; nothing is enlarged.
    @Test func whichPicturesAreDownscaled() {
        let sizing = ImageSizing()
        #expect(sizing.decide(contentType: "image/jpeg", width: 4032, height: 3024, bytes: 3_800_000) == .downscale(maxPixelSize: 2048, quality: 0.8))
        #expect(sizing.decide(contentType: "image/jpeg", width: 1200, height: 900, bytes: 300_000) == .keep)
        #expect(sizing.decide(contentType: "image/png", width: 1200, height: 900, bytes: 4_000_000) == .downscale(maxPixelSize: 1200, quality: 0.8),
            "a heavy picture within the size is re-encoded, not enlarged")
        #expect(sizing.decide(contentType: "IMAGE/HEIC", width: 640, height: 480, bytes: 90_000) == .downscale(maxPixelSize: 640, quality: 0.8))
        #expect(sizing.decide(contentType: "image/gif", width: 4000, height: 4000, bytes: 9_000_000) == .keep)
        #expect(sizing.decide(contentType: "image/svg+xml", width: 4000, height: 4000, bytes: 9_000_000) == .keep)
        #expect(sizing.decide(contentType: "application/pdf", width: 4000, height: 4000, bytes: 9_000_000) == .keep)
        #expect(sizing.decide(contentType: "image/jpeg; q=1", width: 0, height: 0, bytes: 9_000_000) == .keep, "unreadable size: as is")
        #expect(ImageSizing(quality: 7).decide(contentType: "image/jpeg", width: 5000, height: 10, bytes: 1) == .downscale(maxPixelSize: 2048, quality: 1))
    }
}
