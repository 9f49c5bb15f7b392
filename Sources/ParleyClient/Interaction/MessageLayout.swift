import Foundation
import ParleyProtocol
import NIOConcurrencyHelpers

/// A width and a height in points.
public struct LayoutSize: Sendable, Hashable {
    /// The width in points.
    public var width: Double
    /// The height in points.
    public var height: Double
    /// A size from a width and a height.
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }
}

/// Measures text (injected: UIKit or SwiftUI on Apple platforms, a monospace grid in a terminal,
/// a fake in tests).
public protocol TextMeasurer: Sendable {
    /// The size of `text` laid out within `fittingWidth`.
    func size(of text: String, fittingWidth: Double) -> LayoutSize
}

/// A size strategy: how a component computes its size for a message and a width.
public protocol SizeStrategy: Sendable {
    /// The size of the message's component at `fittingWidth`, measuring text with `measurer`.
    func size(of message: LocalMessage, fittingWidth: Double, measurer: any TextMeasurer) -> LayoutSize
}

/// Text bubbles: the measured text plus padding.
public struct TextBubbleStrategy: SizeStrategy {
    /// The space around the text on each side, in points.
    public var padding: Double
    /// A strategy with `padding` points around the text.
    public init(padding: Double = 12) { self.padding = padding }

    /// The measured text (or the deleted-message notice) plus the padding on each side.
    public func size(of message: LocalMessage, fittingWidth: Double, measurer: any TextMeasurer) -> LayoutSize {
        let text = message.deletedAt != nil ? "This message was deleted" : message.text
        let inner = measurer.size(of: text, fittingWidth: max(fittingWidth - 2 * padding, 1))
        return LayoutSize(width: inner.width + 2 * padding, height: inner.height + 2 * padding)
    }
}

/// Media: the attachment's aspect ratio within the width (a square when unknown), plus a caption.
public struct MediaStrategy: SizeStrategy {
    /// The tallest the media may be, in points; a caption adds to it.
    public var maxHeight: Double
    /// A strategy with media at most `maxHeight` points tall.
    public init(maxHeight: Double = 320) { self.maxHeight = maxHeight }

    /// The full width; the height from the attachment's aspect ratio (at most `maxHeight`) plus the caption's.
    public func size(of message: LocalMessage, fittingWidth: Double, measurer: any TextMeasurer) -> LayoutSize {
        let ratio: Double = if let w = message.attachment?.width, let h = message.attachment?.height, w > 0 {
            Double(h) / Double(w)
        } else { 1 }
        let height = min(fittingWidth * ratio, maxHeight)
        let caption = message.text.isEmpty ? 0 : measurer.size(of: message.text, fittingWidth: fittingWidth).height
        return LayoutSize(width: fittingWidth, height: height + caption)
    }
}

/// Fixed-size components (system lines, file cards).
public struct FixedStrategy: SizeStrategy {
    /// The component's height in points.
    public var height: Double
    /// A strategy of `height` points.
    public init(height: Double) { self.height = height }
    /// The full width at the fixed height.
    public func size(of message: LocalMessage, fittingWidth: Double, measurer: any TextMeasurer) -> LayoutSize {
        LayoutSize(width: fittingWidth, height: height)
    }
}

/// What renders one message type: an identifier the renderer maps to its view, and a size strategy.
public struct MessageComponent: Sendable {
    /// What the renderer maps to its view (e.g. "text", "image").
    public var identifier: String
    /// How the component computes its size.
    public var sizeStrategy: any SizeStrategy
    /// A component from an identifier and a size strategy.
    public init(identifier: String, sizeStrategy: any SizeStrategy) {
        self.identifier = identifier
        self.sizeStrategy = sizeStrategy
    }
}

/// The structure layer: message type → component, with defaults an app can override.
public struct MessageComponentRegistry: Sendable {
    private var byType: [MessageType: MessageComponent]
    /// The component for a type with none registered (by default the text bubble).
    public var fallback: MessageComponent

    /// The defaults: text bubbles, media for image/video, fixed cards for the rest.
    public init() {
        let text = MessageComponent(identifier: "text", sizeStrategy: TextBubbleStrategy())
        byType = [
            .text: text,
            .image: MessageComponent(identifier: "image", sizeStrategy: MediaStrategy()),
            .video: MessageComponent(identifier: "video", sizeStrategy: MediaStrategy()),
            .audio: MessageComponent(identifier: "audio", sizeStrategy: FixedStrategy(height: 56)),
            .file: MessageComponent(identifier: "file", sizeStrategy: FixedStrategy(height: 64)),
            .location: MessageComponent(identifier: "location", sizeStrategy: FixedStrategy(height: 160)),
            .system: MessageComponent(identifier: "system", sizeStrategy: FixedStrategy(height: 28)),
        ]
        fallback = text
    }

    /// Uses `component` for `type`.
    public mutating func register(_ component: MessageComponent, for type: MessageType) { byType[type] = component }

    /// The component for a message.
    public func component(for message: LocalMessage) -> MessageComponent { byType[message.type] ?? fallback }
}

/// A layout snapshot cache: each bubble's size is computed once per message version
/// (`updatedSeq`) and width; an edit or a rotation computes it again.
public final class MessageLayoutCache: Sendable {
    struct Key: Hashable {
        var message: String
        var version: Int64
        /// The text measured: an edit made offline is shown before the server gives it a new
        /// version, and must not keep the old text's size.
        var text: String
        var width: Double
    }

    // NIOLockedValueBox, not Synchronization.Mutex: this ships at iOS 17 / macOS 14.
    private let entries = NIOLockedValueBox<[Key: LayoutSize]>([:])
    private let counters = NIOLockedValueBox((hits: 0, misses: 0))
    /// Which component, and so which size strategy, each message type uses.
    public let registry: MessageComponentRegistry
    /// What the size strategies measure text with.
    public let measurer: any TextMeasurer

    /// A cache over `registry` (the defaults unless given) measuring with `measurer`.
    public init(registry: MessageComponentRegistry = MessageComponentRegistry(), measurer: any TextMeasurer) {
        self.registry = registry
        self.measurer = measurer
    }

    /// The size of a message's component at a width, measured at most once.
    public func size(of message: LocalMessage, fittingWidth width: Double) -> LayoutSize {
        // A temporary message has no updatedSeq yet; its text cannot change until it is stored.
        let key = Key(message: message.id, version: message.updatedSeq ?? -1, text: message.text, width: width)
        if let cached = entries.withLockedValue({ $0[key] }) {
            counters.withLockedValue { $0.hits += 1 }
            return cached
        }
        let size = registry.component(for: message).sizeStrategy.size(of: message, fittingWidth: width, measurer: measurer)
        entries.withLockedValue { $0[key] = size }
        counters.withLockedValue { $0.misses += 1 }
        return size
    }

    /// How often a size came from the cache, and how often it was measured.
    public var statistics: (hits: Int, misses: Int) { counters.withLockedValue { $0 } }

    /// Forgets everything (memory warning).
    public func removeAll() { entries.withLockedValue { $0.removeAll() } }
}
