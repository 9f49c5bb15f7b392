import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The one object behind SwiftUI's `ParleyChat`, on Linux against a real server: signing in
/// (and being refused with a sentence), the session kept and resumed, names and rows, a new
/// direct chat, and signing out with this device's data wiped.
@MainActor @Suite struct ChatSessionTests {
    /// The ready-made screens send a picked file: the session's client uploads it before the
    /// message goes (the server refuses a file message without an `attachmentId`), and the
    /// session keeps the renewed refresh token it was given.
    @Test func aFilePickedInTheChatIsUploadedAndSent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (_, bob, direct) = try await server.directPair()
        let folder = TestServer.temporaryDirectory()
        let store = FileSessionStore(path: folder + "/session.json")
        let session = ChatSession(server: server.baseURL, store: store, databaseDirectory: folder + "/db")
        await session.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)
        #expect(try store.load()?.refreshToken != nil, "the refresh token is kept with the session")
        let chat = try #require(session.chat(direct.id))
        await chat.start()
        let file = URL(fileURLWithPath: folder + "/notes.txt")
        try Data("meeting at noon".utf8).write(to: file)
        await chat.send(file: file, contentType: "text/plain", type: .file, caption: "the notes")
        try await waitFor("the file at Bob's") {
            try await bob.api.messages(direct.id).messages.first?.attachment?.name == "notes.txt"
        }
        let received = try #require(try await bob.api.messages(direct.id).messages.first)
        #expect(received.text == "the notes" && received.type == .file)
        let attachment = try #require(received.attachment)
        #expect(try await bob.api.download(attachment.url) == Data("meeting at noon".utf8))
        chat.stop()
        await session.signOut()
    }

    /// The profile screen's actions: a rename and a picked photo reach the user, the names the
    /// screens read and the organization; a refusal leaves a sentence and changes nothing; the
    /// picture downloads through the media cache; a change made on another device arrives.
    @Test func theProfileScreenRenamesAndSetsAPicture() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let folder = TestServer.temporaryDirectory()
        let session = ChatSession(server: server.baseURL, store: FileSessionStore(path: folder + "/session.json"), databaseDirectory: folder + "/db")
        await session.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)

        #expect(await session.rename(to: "Ada Lovelace"))
        #expect(session.user?.displayName == "Ada Lovelace" && session.names.name(alice.id) == "Ada Lovelace")
        #expect(await session.rename(to: "  ") == false)
        #expect(session.profileError?.contains("1–100 characters") == true && session.user?.displayName == "Ada Lovelace", "\(String(describing: session.profileError))")
        #expect(await session.setPicture(Fixtures.png, contentType: "image/png"))
        let url = try #require(session.user?.avatarUrl)
        #expect(session.profileError == nil && session.names.picture(alice.id) == url)
        #expect(try await bob.api.users().first { $0.id == alice.id }?.avatarUrl == url)
        #expect(await session.pictureData(url) == Fixtures.png)
        #expect(await session.setPicture(Data("text".utf8), contentType: "text/plain") == false, "not an image")
        #expect(session.user?.avatarUrl == url)

        // Renamed on another device: the session's user follows (user.updated).
        _ = try await alice.api.updateProfile(.init(displayName: "Countess"))
        try await waitFor("the other device's rename") { await MainActor.run { session.user?.displayName == "Countess" } }
        #expect(await session.removePicture())
        #expect(session.user?.avatarUrl == nil && session.names.picture(alice.id) == nil)
        await session.signOut()
    }

    /// An app's own hooks go through ChatSession (which SwiftUI's ParleyChat takes them into):
    /// its precheck refuses before anything is written, its preparation changes what goes out,
    /// and the SDK's own preparations still run after it.
    @Test func theAppsHooksRunOnWhatTheSessionSends() async throws {
        struct NoSecrets: MessagePrecheck {
            func check(_ request: SendMessageRequest, in conversationId: EntityID) async -> PrecheckVerdict {
                request.text.localizedCaseInsensitiveContains("secret") ? .veto(reason: "No secrets here") : .allow
            }
        }
        struct Signed: MessagePreparation {
            let name = "app.signed"
            func prepare(_ message: PreparedMessage) async throws -> PreparedMessage {
                var message = message
                message.request.metadata = (message.request.metadata ?? [:]).merging(["client": "acme-app"]) { $1 }
                return message
            }
        }
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (_, bob, direct) = try await server.directPair()
        let folder = TestServer.temporaryDirectory()
        let session = ChatSession(
            server: server.baseURL, store: FileSessionStore(path: folder + "/session.json"), databaseDirectory: folder + "/db",
            hooks: MessageHooks(prechecks: [NoSecrets()], preparations: [Signed()]))
        await session.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)
        let chat = try #require(session.chat(direct.id))
        await chat.start()
        await chat.send("the secret plan")
        #expect(chat.lastError == "No secrets here" && chat.messages.isEmpty, "refused before anything is written")
        await chat.send("the public plan")
        try await waitFor("at Bob's") { try await bob.api.messages(direct.id).messages.count == 1 }
        let received = try #require(try await bob.api.messages(direct.id).messages.first)
        #expect(received.text == "the public plan" && received.metadata?["client"] == "acme-app")
        chat.stop()
        await session.signOut()
    }

    @Test func signInResumeStartAChatAndSignOut() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        _ = try await bob.api.send(.init(clientMessageId: "b1", text: "hello"), to: direct.id)
        let carol = try await server.register("carol@x.io", name: "Carol")
        let folder = TestServer.temporaryDirectory()
        let store = FileSessionStore(path: folder + "/session.json")

        let session = ChatSession(server: server.baseURL, store: store, databaseDirectory: folder + "/db")
        await session.signIn(organization: "acme", email: "alice@x.io", password: "wrong-password")
        #expect(session.state == .signedOut && session.error == "Wrong organization, email or password.")
        #expect(try store.load() == nil)

        await session.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)
        #expect(session.state == .signedIn && session.error == nil && session.user?.id == alice.id)
        #expect(try store.load()?.user.id == alice.id)
        let list = try #require(session.list)
        // The first sync normally has the list before sign-in returns; under the whole suite's
        // load on two cores its connection can time out first, and a later sync brings it.
        try await waitFor("the list") { await MainActor.run { list.rows.count == 1 } }
        #expect(list.rows.map(\.title) == ["Bob"], "the direct chat is named after Bob")
        #expect(session.users[carol.id]?.displayName == "Carol")
        let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/session.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "the token is readable by its owner only")

        // A chat screen's model reads the conversation with names.
        let chat = try #require(session.chat(direct.id))
        await chat.start()
        #expect(chat.messages.map(\.text) == ["hello"])
        chat.stop()

        // A new direct chat appears in the list.
        let started = try #require(await session.directConversation(with: carol.id))
        try await waitFor("the new chat in the list") { await MainActor.run { list.rows.contains { $0.id == started } } }
        // So does a new group; one without a name is refused in words.
        let group = try #require(await session.groupConversation(named: "Book club", with: [bob.id, carol.id]))
        try await waitFor("the group in the list") { await MainActor.run { list.rows.contains { $0.id == group && $0.title == "Book club" } } }
        #expect(await session.groupConversation(named: "  ", with: [bob.id]) == nil)
        #expect(session.error?.isEmpty == false)

        // The next launch resumes without a password.
        let relaunch = ChatSession(server: server.baseURL, store: store, databaseDirectory: folder + "/db")
        await relaunch.resume()
        #expect(relaunch.state == .signedIn && relaunch.user?.id == alice.id)
        #expect(relaunch.list?.rows.count == 3)
        await relaunch.forget()
        #expect(relaunch.state == .signedOut)

        // Signing out tells the server, forgets the session and deletes the database.
        await session.signOut()
        #expect(session.state == .signedOut && session.client == nil)
        #expect(try store.load() == nil)
        #expect(!FileManager.default.fileExists(atPath: folder + "/db/parley-\(alice.id).sqlite"))
    }
}
