import ParleyProtocol

/// What renders one message type: an identifier the renderer maps to its view.
///
/// A component carries no size: SwiftUI's lazy stacks and the terminal's line wrap measure each
/// row themselves, and media rows take their shape from the attachment's width and height.
public struct MessageComponent: Sendable, Hashable {
    /// What the renderer maps to its view (e.g. "text", "image").
    public var identifier: String
    /// A component drawn by the view the renderer maps `identifier` to.
    public init(identifier: String) { self.identifier = identifier }
}

/// The structure layer: message type → component, with defaults an app can override.
public struct MessageComponentRegistry: Sendable {
    private var byType: [MessageType: MessageComponent]
    /// The component for a type with none registered (by default the text bubble).
    public var fallback: MessageComponent

    /// The defaults: each type drawn by its own view, named as the type ("text", "image", …).
    public init() {
        byType = Dictionary(uniqueKeysWithValues: MessageType.allCases.map { ($0, MessageComponent(identifier: $0.rawValue)) })
        fallback = MessageComponent(identifier: MessageType.text.rawValue)
    }

    /// Uses `component` for `type`.
    public mutating func register(_ component: MessageComponent, for type: MessageType) { byType[type] = component }

    /// The component for a message.
    public func component(for message: LocalMessage) -> MessageComponent { byType[message.type] ?? fallback }
}
