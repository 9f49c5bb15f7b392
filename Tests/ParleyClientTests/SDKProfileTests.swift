import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// One's own name and picture through the SDK against a real server: the change is in the
/// user's cache when the call returns, reaches another user's cached directory through
/// `user.updated` while their presence stays as it was, and the picture downloads once.
@Suite struct SDKProfileTests {
    @Test func aNewNameAndPictureReachAnotherDevicesDirectory() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let clock = ManualClock()
        let bobs = try ChatClientTests.client(bob, clock: clock)
        await bobs.start()
        try await bobs.refreshDirectory()
        let alices = try ChatClientTests.client(alice, clock: clock)
        await alices.start()  // alice online: bob's cache says so
        try await waitFor("bob sees alice online") {
            try await bobs.database.users().first { $0.id == alice.id }?.isOnline == true
        }
        let file = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("me.png")
        try Fixtures.png.write(to: file)

        let renamed = try await alices.setDisplayName("Ada Lovelace")
        #expect(renamed.displayName == "Ada Lovelace")
        let pictured = try await alices.setAvatar(file: file, contentType: "image/png")
        let url = try #require(pictured.avatarUrl)
        #expect(try await alices.database.users().first { $0.id == alice.id }?.avatarUrl == url, "the own cache at once")

        try await waitFor("bob's directory has the new name and picture") {
            let cached = try await bobs.database.users().first { $0.id == alice.id }
            return cached?.displayName == "Ada Lovelace" && cached?.avatarUrl == url
        }
        #expect(try await bobs.database.users().first { $0.id == alice.id }?.isOnline == true, "presence kept")
        #expect(try await bobs.database.user(alice.id)?.avatarUrl == url, "one row read as the whole directory has it")
        #expect(try await bobs.database.user(EntityID()) == nil)
        // The picture downloads once, then comes from the media cache.
        let cached = try #require(try await bobs.database.users().first { $0.id == alice.id })
        #expect(await bobs.pictureData(of: cached) == Fixtures.png)
        #expect(await bobs.pictureData(of: cached) == Fixtures.png)
        #expect(await bobs.media.downloads == 1)

        // Refusals change nothing and say why.
        await #expect(throws: ClientError.self) { try await alices.setDisplayName("   ") }
        await #expect(throws: ClientError.self) { try await alices.setAvatar(file: file, contentType: "text/plain") }
        #expect(try await alice.api.me().displayName == "Ada Lovelace")

        try await alices.removeAvatar()
        try await waitFor("bob's directory without the picture") {
            try await bobs.database.users().first { $0.id == alice.id }?.avatarUrl == nil
        }
        #expect(await bobs.pictureData(of: try #require(try await bobs.database.users().first { $0.id == alice.id })) == nil)
        await alices.stop()
        await bobs.stop()
    }
}
