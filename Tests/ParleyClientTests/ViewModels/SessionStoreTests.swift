import Foundation
import ParleyClient
import ParleyProtocol
import Testing

/// Where the signed-in user is kept between launches: a file only its owner can read, that
/// round-trips every field (a lost refresh token is a forced sign-in), forgets on sign-out,
/// and refuses to guess when damaged; renewed tokens written into it keep the user; and the
/// names book the screens read from any thread.
@Suite struct SessionStoreTests {
    static let user = User(
        id: EntityID(), organizationId: EntityID(), email: "zoë@x.io", displayName: "Zoë Ångström 🌍", isOnline: true,
        role: .admin, avatarUrl: "/api/v1/attachments/\(EntityID())")
    static let session = AuthResponse(
        token: "access-1", user: user, refreshToken: "refresh-1", expiresAt: Date(millisecondsSince1970: 1_795_000_900_123),
        refreshExpiresAt: Date(millisecondsSince1970: 1_797_000_000_000))

    /// A session file path in a folder that does not exist yet.
    static func path() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("parley-store-\(UUID().uuidString)/nested/session.json").path
    }

    @Test func aSavedSessionComesBackWhole() throws {
        let store = FileSessionStore(path: Self.path())
        #expect(try store.load() == nil, "no file: signed out")
        try store.save(Self.session)
        #expect(try store.load() == Self.session, "every field, milliseconds and unicode included")
        #expect(try FileSessionStore(path: store.path).load() == Self.session, "another launch reads the same")
    }

    /// The file holds a credential: only its owner may read or write it, even when it existed
    /// before with looser permissions.
    @Test func theFileIsReadableByItsOwnerOnly() throws {
        let store = FileSessionStore(path: Self.path())
        try store.save(Self.session)
        var mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: store.path)
        var renewed = Self.session
        renewed.token = "access-2"
        try store.save(renewed)
        mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600, "a rewrite tightens it again")
        #expect(try store.load()?.token == "access-2")
    }

    @Test func signingOutDeletesTheFileAndCanBeRepeated() throws {
        let store = FileSessionStore(path: Self.path())
        try store.save(Self.session)
        try store.save(nil)
        #expect(!FileManager.default.fileExists(atPath: store.path))
        try store.save(nil)
        #expect(try store.load() == nil)
    }

    /// A damaged file (a half-written disk, an edit by hand) is an error, not a silent
    /// sign-out that would make the app throw away an outbox it could still send.
    @Test(arguments: ["", "{", "null", #"{"token":"t"}"#, "\u{FEFF}garbage"])
    func aDamagedFileIsAnErrorNotASignOut(contents: String) throws {
        let store = FileSessionStore(path: Self.path())
        try store.save(Self.session)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: store.path))
        #expect(throws: (any Error).self) { try store.load() }
    }

    /// Renewed tokens are written into the kept session; its user stays as it was. With no
    /// session kept (signed out meanwhile) nothing is written: a renewal must not sign back in.
    @Test func renewedTokensGoIntoTheKeptSession() throws {
        let store = FileSessionStore(path: Self.path())
        let credentials = SessionStoreCredentials(store: store)
        try credentials.saveTokens(SessionTokens(token: "ghost", refreshToken: "ghost-r"))
        #expect(try store.load() == nil && credentials.loadTokens() == nil)

        try store.save(Self.session)
        #expect(credentials.loadTokens() == SessionTokens(token: "access-1", refreshToken: "refresh-1", expiresAt: Self.session.expiresAt))
        let expiry = Date(millisecondsSince1970: 1_795_001_800_000)
        try credentials.saveTokens(SessionTokens(token: "access-2", refreshToken: "refresh-2", expiresAt: expiry))
        let kept = try #require(try store.load())
        #expect(kept.token == "access-2" && kept.refreshToken == "refresh-2" && kept.expiresAt == expiry)
        #expect(kept.user == Self.user)
        // A renewal that has no expiry to tell clears the old one rather than keeping a wrong time.
        try credentials.saveTokens(SessionTokens(token: "access-3", refreshToken: "refresh-3"))
        #expect(try store.load()?.expiresAt == nil)
    }

    /// A damaged file is not read as "no tokens" silently by the renewal: it finds none, and
    /// the renewal it then makes is not written over the damaged file.
    @Test func aDamagedFileGivesNoTokensAndIsNotOverwritten() throws {
        let store = FileSessionStore(path: Self.path())
        try store.save(Self.session)
        try Data("{".utf8).write(to: URL(fileURLWithPath: store.path))
        let credentials = SessionStoreCredentials(store: store)
        #expect(credentials.loadTokens() == nil)
        #expect(throws: (any Error).self) { try credentials.saveTokens(SessionTokens(token: "t")) }
        #expect(try String(contentsOfFile: store.path, encoding: .utf8) == "{")
    }

    @Test func theNameBookFollowsWhatItLearns() async {
        let book = NameBook()
        let ada = User(id: EntityID(), organizationId: EntityID(), email: "a@x.io", displayName: "Ada", avatarUrl: "/p/1")
        #expect(book.name(ada.id) == nil && book.picture(ada.id) == nil)
        book.learn([ada])
        #expect(book.name(ada.id) == "Ada" && book.picture(ada.id) == "/p/1")
        var renamed = ada
        renamed.displayName = "Ada L. 🧮"
        renamed.avatarUrl = nil
        book.learn([renamed])
        #expect(book.name(ada.id) == "Ada L. 🧮" && book.picture(ada.id) == nil, "a removed picture is forgotten")
        // Read and learned from many threads at once: every name lands.
        let people = (0..<200).map { User(id: EntityID(), organizationId: ada.organizationId, email: "\($0)@x.io", displayName: "P\($0)") }
        await withTaskGroup(of: Void.self) { group in
            for chunk in stride(from: 0, to: 200, by: 20) {
                group.addTask { book.learn(Array(people[chunk..<chunk + 20])) }
                group.addTask { _ = people.map { book.name($0.id) } }
            }
        }
        #expect(people.allSatisfy { book.name($0.id) == $0.displayName })
    }
}
