#if canImport(SwiftUI)
import SwiftUI

/// The colours and fonts of the chat screens, so an app's chat looks like the app: set it on
/// ``ParleyChat`` (`ParleyChat(server:theme:)`) or on any screen with
/// ``SwiftUI/View/parleyTheme(_:)``. Anything left as it is follows the system (the app's
/// accent colour, Dynamic Type, dark mode).
public struct ParleyTheme: Sendable {
    /// One's own bubbles, the read mark, the mention bar and badges.
    public var accent: Color
    /// The text in one's own bubbles.
    public var ownText: Color
    /// Other people's bubbles.
    public var otherBubble: Color
    /// The text in other people's bubbles.
    public var otherText: Color
    /// A message's text.
    public var body: Font
    /// Names, times, reactions and status lines.
    public var caption: Font
    /// How round a bubble's corners are.
    public var bubbleRadius: CGFloat

    /// A theme; by default the system's: the accent colour, grey bubbles for others, the body
    /// and caption text styles (so Dynamic Type applies), corners of 16 points.
    public init(
        accent: Color = .accentColor, ownText: Color = .white, otherBubble: Color = Color.secondary.opacity(0.18),
        otherText: Color = .primary, body: Font = .body, caption: Font = .caption, bubbleRadius: CGFloat = 16
    ) {
        self.accent = accent
        self.ownText = ownText
        self.otherBubble = otherBubble
        self.otherText = otherText
        self.body = body
        self.caption = caption
        self.bubbleRadius = bubbleRadius
    }

    /// The system's look.
    public static let standard = ParleyTheme()
}

private struct ParleyThemeKey: EnvironmentKey {
    static let defaultValue = ParleyTheme.standard
}

extension EnvironmentValues {
    /// The chat screens' colours and fonts.
    public var parleyTheme: ParleyTheme {
        get { self[ParleyThemeKey.self] }
        set { self[ParleyThemeKey.self] = newValue }
    }
}

extension View {
    /// Gives the chat screens inside this view these colours and fonts.
    public func parleyTheme(_ theme: ParleyTheme) -> some View {
        environment(\.parleyTheme, theme)
    }
}
#endif
