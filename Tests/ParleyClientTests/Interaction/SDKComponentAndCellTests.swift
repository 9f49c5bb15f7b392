import Foundation
import ParleyClient
import ParleyProtocol
import Testing

/// Components and cells: every type has its component, an app's own wins, and a cell is never an
/// empty media frame or a pin with bad coordinates.
@Suite struct SDKComponentAndCellTests {
    static func message(
        _ text: String, type: MessageType = .text, updatedSeq: Int64 = 1, attachment: ParleyProtocol.Attachment? = nil,
        metadata: [String: String]? = nil, deleted: Bool = false
    ) -> LocalMessage {
        LocalMessage(
            Message(
                id: EntityID(), conversationId: EntityID(), seq: 1, updatedSeq: updatedSeq, senderId: EntityID(), clientMessageId: "c",
                type: type, text: text, attachment: attachment, metadata: metadata, createdAt: Date(timeIntervalSince1970: 0),
                deletedAt: deleted ? Date(timeIntervalSince1970: 1) : nil),
            delivery: .received)
    }

    static func image(width: Int?, height: Int?) -> ParleyProtocol.Attachment {
        ParleyProtocol.Attachment(id: EntityID(), name: "p.png", contentType: "image/png", size: 10, url: "/p", width: width, height: height)
    }

    /// The default component of every type, and the fallback for one an app leaves out.
    @Test func everyTypeHasItsDefaultComponent() {
        let registry = MessageComponentRegistry()
        let expected: [MessageType: String] = [
            .text: "text", .image: "image", .video: "video", .audio: "audio", .file: "file", .location: "location", .system: "system",
        ]
        for type in MessageType.allCases {
            #expect(registry.component(for: Self.message("x", type: type)).identifier == expected[type], "\(type)")
        }
    }

    /// Cells never show an empty media frame or a pin off the map; a deleted message is the
    /// deleted cell whatever its type or registered component.
    @Test(arguments: [
        (MessageType.image, true, [String: String]?.none, false, ChatPresentation.Cell.image),
        (.image, false, nil, false, .text),
        (.video, true, nil, false, .video),
        (.audio, false, nil, false, .text),
        (.file, true, nil, true, .deleted),
        (.location, false, ["latitude": "51.5", "longitude": "-0.12"], false, .location),
        (.location, false, ["latitude": "90", "longitude": "180"], false, .location),
        (.location, false, ["latitude": "-90.0001", "longitude": "0"], false, .text),
        (.location, false, ["latitude": "10", "longitude": "180.5"], false, .text),
        (.location, false, ["latitude": "ten", "longitude": "20"], false, .text),
        (.location, false, ["latitude": "10"], false, .text),
        (.location, false, nil, false, .text),
        (.system, false, nil, false, .system),
        (.text, false, nil, true, .deleted),
    ])
    func cells(type: MessageType, hasAttachment: Bool, metadata: [String: String]?, deleted: Bool, cell: ChatPresentation.Cell) {
        let message = Self.message("x", type: type, attachment: hasAttachment ? Self.image(width: 10, height: 10) : nil, metadata: metadata, deleted: deleted)
        #expect(ChatPresentation.cell(for: message) == cell)
    }

    /// An app's own component wins for its type, but not over a delete; the pin keeps its name.
    @Test func customComponentsAndPins() throws {
        var registry = MessageComponentRegistry()
        registry.register(MessageComponent(identifier: "poll"), for: .text)
        #expect(ChatPresentation.cell(for: Self.message("x"), registry: registry) == .custom("poll"))
        #expect(ChatPresentation.cell(for: Self.message("x", deleted: true), registry: registry) == .deleted)
        registry.fallback = MessageComponent(identifier: "unknown")
        #expect(ChatPresentation.cell(for: Self.message("x", type: .audio, attachment: Self.image(width: 1, height: 1)), registry: registry) == .audio)
        let pin = try #require(ChatPresentation.pin(of: Self.message("", type: .location, metadata: ["latitude": "-33.86", "longitude": "151.21", "name": "Sydney"])))
        #expect(pin == ChatPresentation.Pin(latitude: -33.86, longitude: 151.21, name: "Sydney"))
        #expect(ChatPresentation.pin(of: Self.message("", type: .text, metadata: ["latitude": "1", "longitude": "1"])) == nil, "only location messages have pins")
    }
}
