import Foundation
import ParleyClient
import ParleyProtocol
import Synchronization
import Testing

/// Bubble sizes and cells: a cached size must follow what the bubble shows (an offline edit, a
/// delete, the temporary → stored swap), media keeps its aspect within the cap, and a cell is
/// never an empty media frame or a pin with bad coordinates.
@Suite struct SDKLayoutAndCellTests {
    /// Every character is 8×16 points; lines wrap at the width. Counts its calls.
    final class GridMeasurer: TextMeasurer, Sendable {
        let calls = Mutex(0)
        func size(of text: String, fittingWidth: Double) -> LayoutSize {
            calls.withLock { $0 += 1 }
            let perLine = max(Int(fittingWidth / 8), 1)
            let lines = max((text.count + perLine - 1) / perLine, 1)
            return LayoutSize(width: Double(min(text.count, perLine) * 8), height: Double(lines * 16))
        }
    }

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

    /// An edit made offline is shown at once with the same version (the server has not numbered
    /// it yet): its bubble must be measured for the new text, not keep the old size.
    @Test func anOfflineEditIsMeasuredAgainBeforeTheServerConfirmsIt() {
        let measurer = GridMeasurer()
        let cache = MessageLayoutCache(measurer: measurer)
        var message = Self.message("short")
        #expect(cache.size(of: message, fittingWidth: 224) == LayoutSize(width: 40 + 24, height: 16 + 24))
        message.text = String(repeating: "long ", count: 20)
        message.editedAt = Date(timeIntervalSince1970: 5)
        #expect(cache.size(of: message, fittingWidth: 224) == LayoutSize(width: 200 + 24, height: 4 * 16 + 24))
        // The server's confirmation (a new version, same text) measures once more, then caches.
        message.updatedSeq = 2
        _ = cache.size(of: message, fittingWidth: 224)
        _ = cache.size(of: message, fittingWidth: 224)
        #expect(measurer.calls.withLock { $0 } == 3)
        #expect(cache.statistics.hits == 1 && cache.statistics.misses == 3)
    }

    /// A temporary message (no version yet) and its stored copy are the same bubble: sized once
    /// while sending, once more when stored; a delete is sized for the notice.
    @Test func theTemporaryCopyTheStoredCopyAndTheDeleteEachGetTheirSize() {
        let measurer = GridMeasurer()
        let cache = MessageLayoutCache(measurer: measurer)
        var message = Self.message("hello there")
        message.updatedSeq = nil
        message.seq = nil
        let sending = cache.size(of: message, fittingWidth: 100)
        #expect(cache.size(of: message, fittingWidth: 100) == sending)
        message.seq = 7
        message.updatedSeq = 7
        #expect(cache.size(of: message, fittingWidth: 100) == sending)
        #expect(measurer.calls.withLock { $0 } == 2)
        message.text = ""
        message.deletedAt = Date(timeIntervalSince1970: 9)
        message.updatedSeq = 8
        // "This message was deleted" is 24 characters: 9 per line at 76 points inside.
        #expect(cache.size(of: message, fittingWidth: 100) == LayoutSize(width: 72 + 24, height: 3 * 16 + 24))
        // A rotation (another width) is measured; the old width stays cached.
        _ = cache.size(of: message, fittingWidth: 300)
        _ = cache.size(of: message, fittingWidth: 100)
        #expect(measurer.calls.withLock { $0 } == 4)
        cache.removeAll()
        _ = cache.size(of: message, fittingWidth: 100)
        #expect(measurer.calls.withLock { $0 } == 5, "a memory warning empties the cache")
    }

    /// Two different messages with the same text and version are two entries (keyed by the
    /// message, not the text alone).
    @Test func differentMessagesDoNotShareAnEntry() {
        let measurer = GridMeasurer()
        let cache = MessageLayoutCache(measurer: measurer)
        var first = Self.message("same")
        var second = Self.message("same")
        first.senderId = EntityID()
        second.senderId = EntityID()
        _ = cache.size(of: first, fittingWidth: 100)
        _ = cache.size(of: second, fittingWidth: 100)
        #expect(measurer.calls.withLock { $0 } == 2)
    }

    /// Media sizes: the attachment's aspect ratio at the full width, capped at the maximum
    /// height, a square when the size is unknown or the width zero, plus the caption's height.
    @Test(arguments: [
        (Optional(400), Optional(300), "", 200.0, 150.0),
        (Optional(100), Optional(1000), "", 200.0, 320.0),
        (nil, nil, "", 200.0, 200.0),
        (Optional(0), Optional(50), "", 200.0, 200.0),
        (Optional(400), Optional(200), "a caption", 200.0, 100.0 + 16.0),
        (Optional(200), Optional(100), String(repeating: "c", count: 50), 200.0, 100.0 + 32.0),
    ])
    func mediaSizes(width: Int?, height: Int?, caption: String, fitting: Double, expectedHeight: Double) {
        let message = Self.message(caption, type: .image, attachment: Self.image(width: width, height: height))
        let size = MediaStrategy().size(of: message, fittingWidth: fitting, measurer: GridMeasurer())
        #expect(size == LayoutSize(width: fitting, height: expectedHeight))
    }

    /// A text bubble in a width narrower than its padding still measures at least one point
    /// (never a negative width handed to the measurer).
    @Test func aNarrowTextBubbleNeverMeasuresANegativeWidth() {
        final class Recorder: TextMeasurer, Sendable {
            let widths = Mutex<[Double]>([])
            func size(of text: String, fittingWidth: Double) -> LayoutSize {
                widths.withLock { $0.append(fittingWidth) }
                return LayoutSize(width: 1, height: 1)
            }
        }
        let recorder = Recorder()
        _ = TextBubbleStrategy(padding: 12).size(of: Self.message("x"), fittingWidth: 10, measurer: recorder)
        _ = TextBubbleStrategy(padding: 0).size(of: Self.message("x"), fittingWidth: 50, measurer: recorder)
        #expect(recorder.widths.withLock { $0 } == [1, 50])
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
        let fixed: [MessageType: Double] = [.audio: 56, .file: 64, .location: 160, .system: 28]
        for (type, height) in fixed {
            let size = registry.component(for: Self.message("x", type: type)).sizeStrategy.size(
                of: Self.message("x", type: type), fittingWidth: 300, measurer: GridMeasurer())
            #expect(size == LayoutSize(width: 300, height: height), "\(type)")
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
        registry.register(MessageComponent(identifier: "poll", sizeStrategy: FixedStrategy(height: 90)), for: .text)
        #expect(ChatPresentation.cell(for: Self.message("x"), registry: registry) == .custom("poll"))
        #expect(ChatPresentation.cell(for: Self.message("x", deleted: true), registry: registry) == .deleted)
        registry.fallback = MessageComponent(identifier: "unknown", sizeStrategy: FixedStrategy(height: 10))
        #expect(ChatPresentation.cell(for: Self.message("x", type: .audio, attachment: Self.image(width: 1, height: 1)), registry: registry) == .audio)
        let pin = try #require(ChatPresentation.pin(of: Self.message("", type: .location, metadata: ["latitude": "-33.86", "longitude": "151.21", "name": "Sydney"])))
        #expect(pin == ChatPresentation.Pin(latitude: -33.86, longitude: 151.21, name: "Sydney"))
        #expect(ChatPresentation.pin(of: Self.message("", type: .text, metadata: ["latitude": "1", "longitude": "1"])) == nil, "only location messages have pins")
    }
}
