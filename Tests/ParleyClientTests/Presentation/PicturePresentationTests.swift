import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Where a person's picture shows, decided in plain Swift for every client: the list row of a
/// direct chat (the other person's), beside others' messages at the start of a group (never
/// beside one's own), and nowhere for groups or people without one.
@Suite struct PicturePresentationTests {
    static let now = PresentationTests.now
    static let ada = "/api/v1/attachments/0199a000-0000-7000-8000-00000000000a"

    @Test func aDirectRowShowsThePeersPictureAndAGroupRowNone() {
        var users = PresentationSamples.users(now: Self.now)
        let rows = PresentationSamples.rows(now: Self.now)
        let me = PresentationSamples.me.id
        #expect(ChatPresentation.listRow(rows[0], me: me, users: users, now: Self.now).picture == nil, "no picture yet: initials")
        users[PresentationSamples.ada.id]?.avatarUrl = Self.ada
        users[me]?.avatarUrl = "/api/v1/attachments/0199a000-0000-7000-8000-00000000000b"
        let direct = ChatPresentation.listRow(rows[0], me: me, users: users, now: Self.now)
        #expect(direct.picture == Self.ada && direct.initials == "AL", "the peer's, never one's own; initials kept for the fallback")
        #expect(ChatPresentation.listRow(rows[1], me: me, users: users, now: Self.now).picture == nil, "a group has none")
    }

    @Test func othersMessagesCarryTheirPictureAndOnesOwnNone() {
        let me = PresentationSamples.me.id
        let messages = PresentationSamples.messages(now: Self.now)
        let pictures: (EntityID) -> String? = { $0 == PresentationSamples.ada.id ? Self.ada : $0 == me ? "/mine" : nil }
        let items = ChatPresentation.timeline(
            messages, me: me, names: PresentationSamples.names(now: Self.now), pictures: pictures, now: Self.now, calendar: PresentationTests.utc)
        let bubbles = items.compactMap { if case .message(let item) = $0 { item } else { nil } }
        #expect(!bubbles.isEmpty)
        for bubble in bubbles {
            let expected: String? = bubble.isOwn ? nil : bubble.message.senderId == PresentationSamples.ada.id ? Self.ada : nil
            #expect(bubble.senderPicture == expected, "\(bubble.senderName): \(String(describing: bubble.senderPicture))")
        }
        #expect(bubbles.contains { $0.senderPicture == Self.ada }, "Ada's messages show her picture")
        // Without pictures (the default), nobody has one.
        let plain = ChatPresentation.timeline(messages, me: me, names: PresentationSamples.names(now: Self.now), now: Self.now)
        #expect(plain.allSatisfy { if case .message(let item) = $0 { item.senderPicture == nil } else { true } })
    }

    @Test func theNameBookKeepsNamesAndPicturesTogether() {
        let book = NameBook()
        var ada = PresentationSamples.ada
        book.learn([ada])
        #expect(book.name(ada.id) == "Ada Lovelace" && book.picture(ada.id) == nil)
        ada.avatarUrl = Self.ada
        ada.displayName = "Ada King"
        book.learn([ada])
        #expect(book.name(ada.id) == "Ada King" && book.picture(ada.id) == Self.ada)
        ada.avatarUrl = nil
        book.learn([ada])
        #expect(book.picture(ada.id) == nil, "a removed picture is forgotten")
    }
}
