#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI

/// A thread: its root at the top, "3 replies" under it, the replies below (the
/// timeline's bubbles), and an input bar whose replies, with the people they "@" mention, go
/// through the outbox like any message, offline too. ``ChatView`` opens it as a navigation
/// destination from a root's thread line, "Reply in thread" or a pinned reply.
///
/// The conversation's ``ChatModel`` does what is not the thread's own: "@" candidates and
/// mention resolution, read receipts for the replies on screen, and the actions on a message
/// (react, pin, edit, delete, resend).
public struct ThreadView: View {
    @State private var model: ThreadModel
    /// The conversation's chat model.
    public let chat: ChatModel
    /// The signed-in session (the user, names, attachment bytes).
    public let session: ChatSession
    /// Which cell each message type gets.
    public let registry: MessageComponentRegistry
    @State private var editing: LocalMessage?
    @State private var visible: [String: LocalMessage] = [:]
    /// The last send: each waits for the one before, so replies go in the order typed.
    @State private var lastSend: Task<Void, Never>?
    /// The picture shown full screen.
    @State private var viewing: ViewedImage?

    /// A thread screen for a model (``ThreadModel/init(client:conversationId:rootId:)``) in
    /// `chat`'s conversation.
    public init(model: ThreadModel, chat: ChatModel, session: ChatSession, registry: MessageComponentRegistry = MessageComponentRegistry()) {
        _model = State(initialValue: model)
        self.chat = chat
        self.session = session
        self.registry = registry
    }

    /// The screen.
    public var body: some View {
        let me = session.user?.id ?? EntityID()
        let names = session.names
        // Two timelines, so the first reply starts a group of its own under the root.
        let rootItems = ChatPresentation.timeline(
            model.root.map { [$0] } ?? [], me: me, names: { names.name($0) }, pictures: { names.picture($0) }, registry: registry)
        let replyItems = ChatPresentation.timeline(model.replies, me: me, names: { names.name($0) }, pictures: { names.picture($0) }, registry: registry)
        ScrollViewReader { proxy in
            ScrollView {
                LazyVStack(spacing: 2) {
                    if model.root == nil {
                        ProgressView().padding()
                    }
                    ForEach(rootItems, id: \.id) { item in
                        row(item)
                    }
                    HStack {
                        VStack { Divider() }
                        Text(replyCount).font(.caption).foregroundStyle(.secondary)
                        VStack { Divider() }
                    }
                    .padding(.vertical, 6)
                    .accessibilityElement(children: .combine)
                    ForEach(replyItems, id: \.id) { item in
                        row(item)
                    }
                }
                .padding(.horizontal, 10)
            }
            .defaultScrollAnchor(.bottom)
            .onChange(of: model.replies.last?.id) { _, newest in
                guard let newest else { return }
                withAnimation { proxy.scrollTo(newest, anchor: .bottom) }
            }
        }
        .safeAreaInset(edge: .top, spacing: 0) {
            if let error = model.lastError ?? chat.lastError {
                Text(error)
                    .font(.footnote)
                    .foregroundStyle(.red)
                    .padding(.horizontal)
                    .frame(maxWidth: .infinity, alignment: .leading)
                    .background(.bar)
            }
        }
        .safeAreaInset(edge: .bottom, spacing: 0) {
            // No typing signal: it would say "is typing" in the conversation, not in the thread
            // (the web client's thread composer sends none either).
            MessageInputBar(
                editing: editing?.text,
                onSend: send,
                onCancel: { editing = nil },
                mentionCandidates: { draft in await chat.mentionCandidates(for: draft) })
                .background(.bar)
        }
        .navigationTitle(tr("Thread"))
        .opensImagesFullScreen($viewing)
        .task { await model.start() }
        .onDisappear { model.stop() }
    }

    /// "1 reply", "3 replies": the root's count, or the replies shown when more are (one
    /// still on its way).
    private var replyCount: String {
        let count = max(model.root?.thread?.replyCount ?? 0, model.replies.count)
        return count == 1 ? tr("1 reply") : tr("\(String(count)) replies")
    }

    @ViewBuilder private func row(_ item: ChatPresentation.Item) -> some View {
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
        case .unread:
            // A thread is opened without a "New messages" line.
            EmptyView()
        case .message(let message):
            MessageBubbleView(item: message, imageData: { await session.attachmentData($0) }, actions: actions, isInThread: true)
                .id(message.message.id)
                .onAppear {
                    visible[message.message.id] = message.message
                    report()
                }
                .onDisappear { visible[message.message.id] = nil }
        }
    }

    private var actions: MessageActions {
        MessageActions(
            reply: { _ in },
            edit: { editing = $0 },
            react: { message, emoji in Task { await chat.react(message, emoji: emoji) } },
            unreact: { message, emoji in Task { await chat.unreact(message, emoji: emoji) } },
            resend: { message in Task { await chat.resend(message) } },
            discard: { message in Task { await chat.discard(message) } },
            revoke: { message in Task { await chat.revoke(message) } },
            deleteForMe: { message in Task { await chat.deleteForMe(message) } },
            pin: { message, pinned in Task { await chat.setPinned(pinned, message) } })
    }

    private func send(_ text: String) {
        let edit = editing
        editing = nil
        let previous = lastSend
        lastSend = Task {
            await previous?.value
            if let edit {
                await chat.edit(edit, text: text)
            } else {
                let mentions = await chat.mentions(in: text)
                await model.send(text, mentions: mentions)
            }
        }
    }

    /// Read receipts for the replies on screen: the conversation's watermark, which a reply's
    /// seq moves like any message's (the web and terminal clients read a thread the same way).
    private func report() {
        let shown = Array(visible.values)
        Task { await chat.messagesBecameVisible(shown) }
    }
}
#endif
