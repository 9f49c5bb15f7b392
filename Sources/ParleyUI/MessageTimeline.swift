#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI
#if canImport(MapKit)
import MapKit
#endif

/// The timeline as ``ChatPresentation/timeline(_:me:names:pictures:now:calendar:registry:unreadAfter:)`` decided it:
/// day titles, notices and bubbles. It only lays out; previews feed it sample data.
public struct MessageTimeline: View {
    /// The items, oldest first.
    public let items: [ChatPresentation.Item]
    /// Whether older messages may exist: reaching the top asks for them.
    public let canLoadOlder: Bool
    /// An attachment's bytes (an image cell's picture); nil shows a placeholder.
    public let imageData: (Attachment) async -> Data?
    /// What a person can do to a message.
    public let actions: MessageActions
    /// A message's row came on screen.
    public let onAppear: (LocalMessage) -> Void
    /// A message's row left the screen.
    public let onDisappear: (LocalMessage) -> Void
    /// The top was reached (load older messages).
    public let onReachTop: () -> Void

    /// A timeline of items.
    public init(
        items: [ChatPresentation.Item], canLoadOlder: Bool = false, imageData: @escaping (Attachment) async -> Data? = { _ in nil },
        actions: MessageActions = .none, onAppear: @escaping (LocalMessage) -> Void = { _ in },
        onDisappear: @escaping (LocalMessage) -> Void = { _ in }, onReachTop: @escaping () -> Void = {}
    ) {
        self.items = items
        self.canLoadOlder = canLoadOlder
        self.imageData = imageData
        self.actions = actions
        self.onAppear = onAppear
        self.onDisappear = onDisappear
        self.onReachTop = onReachTop
    }

    @State private var scrolledToUnread = false
    /// The item at the top of the screen. Bound to the scroll view, it keeps that item where it
    /// is when an older page is put in above it: the list does not jump.
    @State private var topItem: String?

    /// The scrolling list.
    public var body: some View {
        ScrollViewReader { proxy in
        ScrollView {
            LazyVStack(spacing: 2) {
                if canLoadOlder {
                    ProgressView()
                        .padding()
                        .onAppear(perform: onReachTop)
                }
                if items.isEmpty {
                    Text(ChatPresentation.emptyChatText)
                        .foregroundStyle(.secondary)
                        .padding(.top, 40)
                }
                ForEach(items, id: \.id) { item in
                    switch item {
                    case .day(let title):
                        Text(title)
                            .font(.caption.bold())
                            .foregroundStyle(.secondary)
                            .padding(.vertical, 8)
                    case .notice(let text, _):
                        Text(text)
                            .font(.caption)
                            .foregroundStyle(.secondary)
                            .multilineTextAlignment(.center)
                            .padding(.vertical, 4)
                    case .unread(let label):
                        HStack {
                            VStack { Divider() }
                            Text(label).font(.caption.bold()).foregroundStyle(.tint)
                            VStack { Divider() }
                        }
                        .padding(.vertical, 6)
                        .id("unread")
                        .accessibilityAddTraits(.isHeader)
                    case .message(let message):
                        MessageBubbleView(item: message, imageData: imageData, actions: actions)
                            .id(message.message.id)
                            .onAppear { onAppear(message.message) }
                            .onDisappear { onDisappear(message.message) }
                    }
                }
            }
            .padding(.horizontal, 10)
            .scrollTargetLayout()
        }
        .scrollPosition(id: $topItem, anchor: .top)
        .defaultScrollAnchor(.bottom)
        // Opened with unread messages: at the "New messages" line, once it is there.
        .onChange(of: items.contains { $0.id == "unread" }, initial: true) { _, hasUnreadLine in
            guard hasUnreadLine, !scrolledToUnread else { return }
            scrolledToUnread = true
            proxy.scrollTo("unread", anchor: .top)
        }
        }
    }
}

/// One message: the sender's name at the start of a group, the reply quote, the cell for its
/// type, the link preview card, reactions, a thread root's "💬 3 replies · 10:42" (opens the
/// thread), and the pin mark, "edited", the time and the status mark. A message that mentions
/// the user has an accent bar on its leading edge. A refused message of one's own is tapped to
/// send it again.
public struct MessageBubbleView: View {
    /// What the bubble shows.
    public let item: ChatPresentation.MessageItem
    /// An attachment's bytes.
    public let imageData: (Attachment) async -> Data?
    /// What a person can do to it.
    public let actions: MessageActions
    /// Shown inside a thread (``ThreadView``): no quote reply, no thread line, no "Reply in thread".
    public let isInThread: Bool

    /// A bubble for an item.
    public init(
        item: ChatPresentation.MessageItem, imageData: @escaping (Attachment) async -> Data? = { _ in nil },
        actions: MessageActions = .none, isInThread: Bool = false
    ) {
        self.item = item
        self.imageData = imageData
        self.actions = actions
        self.isInThread = isInThread
    }

    static let quickReactions = ["👍", "❤️", "😂", "🎉", "😮"]
    @Environment(\.parleyTheme) private var theme
    /// Whether the "any emoji" field is up, and what it holds.
    @State var choosingEmoji = false
    @State var otherEmoji = ""

    /// The bubble.
    public var body: some View {
        HStack {
            if item.isOwn { Spacer(minLength: 48) }
            VStack(alignment: item.isOwn ? .trailing : .leading, spacing: 2) {
                if item.startsGroup, !item.isOwn {
                    HStack(spacing: 6) {
                        AvatarView(initials: ChatPresentation.initials(item.senderName), presence: nil, picture: item.senderPicture, size: 20)
                        Text(item.senderName).font(theme.caption.bold()).foregroundStyle(.secondary).lineLimit(1)
                    }
                }
                VStack(alignment: .leading, spacing: 4) {
                    if let quote = item.replyPreview {
                        Text(quote)
                            .font(.caption)
                            .lineLimit(2)
                            .padding(6)
                            .background(.secondary.opacity(0.15), in: RoundedRectangle(cornerRadius: 8))
                    }
                    MessageCell(item: item, imageData: imageData)
                    if let card = item.previewCard {
                        LinkPreviewCard(card: card)
                    }
                }
                .padding(10)
                .font(theme.body)
                .foregroundStyle(item.isOwn ? theme.ownText : theme.otherText)
                .background(item.isOwn ? theme.accent : theme.otherBubble, in: RoundedRectangle(cornerRadius: theme.bubbleRadius))
                .overlay(alignment: .leading) {
                    if item.mentionsMe {
                        // It mentions the user (never an own message): the web client's accent bar.
                        Capsule().fill(theme.accent).frame(width: 4).padding(.vertical, 10)
                    }
                }
                if !item.reactions.isEmpty {
                    Text(item.reactions)
                        .font(theme.caption)
                        .help(item.reactionPeople)
                        .accessibilityLabel(item.reactionPeople)
                }
                if let line = item.threadLine, !isInThread {
                    Button {
                        actions.openThread?(item.message)
                    } label: {
                        Label(line, systemImage: "bubble.left.and.bubble.right")
                    }
                    .font(.caption.bold())
                    .buttonStyle(.borderless)
                    .disabled(actions.openThread == nil)
                    .accessibilityLabel(tr("Open thread, \(line)"))
                }
                HStack(spacing: 4) {
                    if item.isPinned, item.cell != .deleted {
                        Image(systemName: "pin.fill").accessibilityLabel(tr("Pinned"))
                    }
                    if item.mentionsMe {
                        Image(systemName: "at").accessibilityLabel(tr("Mentions you"))
                    }
                    if item.isEdited { Text(tr("edited")) }
                    Text(item.time)
                    if let status = item.status {
                        Text(status.glyph)
                            .foregroundStyle(status == .read ? theme.accent : status.canResend ? Color.red : Color.secondary)
                            .accessibilityLabel(status.label)
                        if status.canResend { Text(tr("Tap to resend")).foregroundStyle(.red) }
                    }
                }
                .font(.caption2)
                .foregroundStyle(.secondary)
            }
            if !item.isOwn { Spacer(minLength: 48) }
        }
        .padding(.top, item.startsGroup ? 6 : 0)
        .contentShape(Rectangle())
        .onTapGesture {
            if item.status?.canResend == true { actions.resend(item.message) }
        }
        .contextMenu { menu }
        .alert(tr("React with any emoji"), isPresented: $choosingEmoji) {
            TextField(tr("Emoji"), text: $otherEmoji)
            Button(tr("React")) {
                let emoji = otherEmoji.trimmingCharacters(in: .whitespaces)
                otherEmoji = ""
                if !emoji.isEmpty, !item.myReactions.contains(emoji) { actions.react(item.message, emoji) }
            }
            Button(tr("Cancel"), role: .cancel) { otherEmoji = "" }
        }
    }

}

/// How an app draws the message kinds it registered in the interaction layer's component
/// registry (``ChatPresentation/Cell/custom(_:)``): the kind and the message in, a view out, or
/// nil for the plain text. Set it with ``SwiftUI/View/customMessageCell(_:)``.
public struct CustomMessageCell: Sendable {
    let make: @MainActor @Sendable (String, LocalMessage) -> AnyView?

    /// A drawer of custom cells.
    public init(_ make: @escaping @MainActor @Sendable (String, LocalMessage) -> AnyView?) {
        self.make = make
    }
}

private struct CustomMessageCellKey: EnvironmentKey {
    static let defaultValue: CustomMessageCell? = nil
}

extension EnvironmentValues {
    /// The app's drawer of custom message cells, if it set one.
    public var customMessageCell: CustomMessageCell? {
        get { self[CustomMessageCellKey.self] }
        set { self[CustomMessageCellKey.self] = newValue }
    }
}

extension View {
    /// Draws the app's own message kinds in every timeline below this view:
    /// `ChatView(...).customMessageCell { kind, message in kind == "poll" ? AnyView(PollView(message)) : nil }`.
    public func customMessageCell(_ make: @escaping @MainActor @Sendable (String, LocalMessage) -> AnyView?) -> some View {
        environment(\.customMessageCell, CustomMessageCell(make))
    }
}

/// The body of a bubble, by ``ChatPresentation/Cell``.
struct MessageCell: View {
    let item: ChatPresentation.MessageItem
    let imageData: (Attachment) async -> Data?
    @Environment(\.customMessageCell) private var customCell
    @Environment(\.parleyOpenImage) private var openImage
    @State private var image: Image?
    /// Pictures grow with the reader's text size (Dynamic Type), as the text beside them does.
    @ScaledMetric(relativeTo: .body) private var pictureWidth: CGFloat = 260
    @ScaledMetric(relativeTo: .body) private var pictureHeight: CGFloat = 320

    var body: some View {
        switch item.cell {
        case .image:
            VStack(alignment: .leading, spacing: 4) {
                Group {
                    if let image {
                        image.resizable().scaledToFit()
                    } else {
                        Rectangle().fill(.quaternary).aspectRatio(aspect, contentMode: .fit)
                            .overlay(ProgressView())
                    }
                }
                .frame(maxWidth: pictureWidth, maxHeight: pictureHeight)
                .clipShape(RoundedRectangle(cornerRadius: 10))
                .contentShape(Rectangle())
                .onTapGesture(perform: showFullScreen)
                .accessibilityElement()
                .accessibilityLabel(spoken)
                .accessibilityValue(image == nil ? tr("Loading") : "")
                .accessibilityAddTraits(openImage != nil && image != nil ? [.isImage, .isButton] : .isImage)
                .accessibilityHint(openImage != nil && image != nil ? tr("Opens the picture full screen") : "")
                .accessibilityAction(.default, showFullScreen)
                if !item.body.isEmpty { Text(item.body) }
            }
            .task(id: item.message.attachment?.id) { await loadImage() }
        case .video, .audio, .file:
            VStack(alignment: .leading, spacing: 4) {
                Label(item.attachmentLine ?? tr("Attachment"), systemImage: symbol)
                    .accessibilityLabel(spoken)
                if !item.body.isEmpty { Text(item.body) }
            }
        case .location:
            LocationCell(item: item)
        case .deleted:
            Text(item.body).italic().foregroundStyle(.secondary)
        case .custom(let kind):
            if let drawn = customCell?.make(kind, item.message) {
                drawn
            } else {
                Text(item.body).textSelection(.enabled)
            }
        case .text, .system:
            Text(item.body).textSelection(.enabled)
        }
    }

    private var symbol: String {
        switch item.cell {
        case .video: "film"
        case .audio: "waveform"
        default: "doc"
        }
    }

    /// What VoiceOver says of the attachment ("Picture, photo.png, 1.2 MB").
    private var spoken: String {
        item.message.attachment.map(ChatPresentation.spokenAttachment) ?? tr("Attachment")
    }

    private var aspect: CGFloat {
        guard let width = item.message.attachment?.width, let height = item.message.attachment?.height, width > 0, height > 0 else { return 1 }
        return CGFloat(width) / CGFloat(height)
    }

    /// The loaded picture, full screen (nothing while it is still loading).
    private func showFullScreen() {
        guard let image, let openImage, let attachment = item.message.attachment else { return }
        openImage(ViewedImage(id: attachment.id, image: image, name: attachment.name, label: spoken))
    }

    private func loadImage() async {
        guard image == nil, let attachment = item.message.attachment, let data = await imageData(attachment) else { return }
        #if os(iOS)
        if let picture = UIImage(data: data) { image = Image(uiImage: picture) }
        #elseif os(macOS)
        if let picture = NSImage(data: data) { image = Image(nsImage: picture) }
        #endif
    }
}

/// A map with the pin of a location message.
struct LocationCell: View {
    let item: ChatPresentation.MessageItem

    var body: some View {
        if let pin = ChatPresentation.pin(of: item.message) {
            VStack(alignment: .leading, spacing: 4) {
                #if canImport(MapKit)
                let coordinate = CLLocationCoordinate2D(latitude: pin.latitude, longitude: pin.longitude)
                Map(initialPosition: .region(MKCoordinateRegion(center: coordinate, latitudinalMeters: 800, longitudinalMeters: 800))) {
                    Marker(pin.name ?? tr("Location"), coordinate: coordinate)
                }
                .frame(width: 240, height: 150)
                .clipShape(RoundedRectangle(cornerRadius: 10))
                #endif
                Label(pin.name ?? String(format: "%.4f, %.4f", pin.latitude, pin.longitude), systemImage: "mappin.and.ellipse")
                    .font(.caption)
                if !item.body.isEmpty { Text(item.body) }
            }
        } else {
            Text(item.body)
        }
    }
}

#Preview("Timeline") {
    MessageTimeline(items: ChatPresentation.timeline(
        PresentationSamples.messages(), me: PresentationSamples.me.id, names: PresentationSamples.names()))
}
#endif
