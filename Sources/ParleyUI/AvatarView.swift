#if canImport(SwiftUI)
import ParleyClient
import SwiftUI

/// Loads a person's picture by its address (`User.avatarUrl`); ``ParleyChat``
/// puts the session's (``ChatSession/pictureData(_:)``, through the media cache) in the
/// environment. Without one, avatars show initials.
public struct PictureLoader: Sendable {
    let load: @Sendable (String) async -> Data?

    /// A loader over `load`.
    public init(_ load: @escaping @Sendable (String) async -> Data?) { self.load = load }
}

private struct PictureLoaderKey: EnvironmentKey {
    static let defaultValue: PictureLoader? = nil
}

extension EnvironmentValues {
    /// How avatars load pictures; nil shows initials only.
    public var parleyPictures: PictureLoader? {
        get { self[PictureLoaderKey.self] }
        set { self[PictureLoaderKey.self] = newValue }
    }
}

/// A person's picture in a circle (initials while it loads, without one, or when it cannot
/// be had), with a green dot when they are online.
struct AvatarView: View {
    let initials: String
    let presence: ChatPresentation.Presence?
    let picture: String?
    let size: CGFloat
    @Environment(\.parleyPictures) private var pictures
    @Environment(\.parleyTheme) private var theme
    @State private var image: Image?

    /// Initials (and the picture at `picture`, once loaded) in a circle `size` points wide.
    init(initials: String, presence: ChatPresentation.Presence?, picture: String? = nil, size: CGFloat = 44) {
        self.initials = initials
        self.presence = presence
        self.picture = picture
        self.size = size
    }

    var body: some View {
        ZStack {
            Circle().fill(theme.accent.gradient)
            if let image {
                image.resizable().scaledToFill()
            } else {
                Text(initials)
                    .font(size < 32 ? .caption2.bold() : .callout.bold())
                    .foregroundStyle(.white)
            }
        }
        .frame(width: size, height: size)
        .clipShape(Circle())
        .overlay(alignment: .bottomTrailing) {
            if presence == .online {
                Circle()
                    .fill(.green)
                    .frame(width: size * 0.27, height: size * 0.27)
                    .overlay(Circle().stroke(.background, lineWidth: 2))
            }
        }
        .task(id: picture) { await load() }
        .accessibilityHidden(true)
    }

    /// A new address is a new picture (an address never changes its bytes).
    private func load() async {
        image = nil
        guard let picture, let pictures, let data = await pictures.load(picture) else { return }
        #if os(iOS)
        if let decoded = UIImage(data: data) { image = Image(uiImage: decoded) }
        #elseif os(macOS)
        if let decoded = NSImage(data: data) { image = Image(nsImage: decoded) }
        #endif
    }
}
#endif
