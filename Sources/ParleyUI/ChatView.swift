#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI

/// A conversation: the timeline (bubbles grouped by sender and day, status marks, replies,
/// reactions, attachments, pins, mentions, link previews, thread lines), paging back, jump to
/// the newest, read receipts for what is on screen, the typing line, the pinned bar, the
/// connection banner, mute in the toolbar and the input bar with "@" completion.
///
/// A thread (``ThreadView``) opens as a navigation destination over the chat, so the chat
/// goes inside a `NavigationStack` (``ParleyChat`` puts it in one).
public struct ChatView: View {
    @State private var model: ChatModel
    /// The signed-in session (the user, names, presence, attachment bytes).
    public let session: ChatSession
    /// Which cell each message type gets (an app registers its own components here).
    public let registry: MessageComponentRegistry
    @State private var replyingTo: LocalMessage?
    @State private var editing: LocalMessage?
    @State private var visible: [String: LocalMessage] = [:]
    @State private var atBottom = true
    @State private var newBelow = 0
    /// The root (server id) of the thread shown over the chat.
    @State private var threadRoot: EntityID?
    /// The message being reported, while the reason is asked for.
    @State private var reporting: LocalMessage?
    @State private var reportReason = ""
    /// A message to bring on screen (the pinned bar's).
    @State private var scrollTarget: String?
    /// The last send: each waits for the one before, so messages go in the order typed even
    /// though resolving mentions awaits the database first.
    @State private var lastSend: Task<Void, Never>?
    /// The model was started and not stopped since (a thread pushed over the chat keeps it so).
    @State private var isRunning = false
    /// The message being forwarded, while a conversation is picked.
    @State private var forwarding: LocalMessage?
    /// The message whose attachment is being saved.
    @State private var saving: LocalMessage?
    /// Whether the conversation's search is up.
    @State private var searching = false
    /// Whether the group's members sheet is up.
    @State private var managingGroup = false
    /// The picture shown full screen.
    @State private var viewing: ViewedImage?

    /// A chat screen for a model (``ChatSession/chat(_:)`` makes one).
    public init(model: ChatModel, session: ChatSession, registry: MessageComponentRegistry = MessageComponentRegistry()) {
        _model = State(initialValue: model)
        self.session = session
        self.registry = registry
    }

    private var conversation: Conversation? {
        session.list?.rows.first { $0.id == model.conversationId }?.conversation
    }

    /// The screen.
    public var body: some View {
        let me = session.user?.id ?? EntityID()
        let names = session.names
        let items = ChatPresentation.timeline(
            model.messages, me: me, names: { names.name($0) }, pictures: { names.picture($0) }, registry: registry,
            unreadAfter: model.unreadAfter)
        ScrollViewReader { proxy in
            MessageTimeline(
                items: items, canLoadOlder: model.canLoadOlder, imageData: { await session.attachmentData($0) },
                actions: actions,
                onAppear: { message in
                    visible[message.id] = message
                    if message.id == model.messages.last?.id {
                        atBottom = true
                        newBelow = 0
                    }
                    report()
                },
                onDisappear: { message in
                    visible[message.id] = nil
                    if message.id == model.messages.last?.id { atBottom = false }
                },
                onReachTop: { Task { await model.loadOlder() } })
            .overlay(alignment: .bottomTrailing) {
                if !atBottom, let last = model.messages.last {
                    Button(ChatPresentation.jumpToNewest(newBelow: newBelow)) {
                        withAnimation { proxy.scrollTo(last.id, anchor: .bottom) }
                    }
                    .buttonStyle(.borderedProminent)
                    .padding()
                }
            }
            .onChange(of: model.messages.last?.id) { _, newest in
                guard let newest else { return }
                if atBottom {
                    withAnimation { proxy.scrollTo(newest, anchor: .bottom) }
                    // Read to the end: the pages scrolled through on the way up can go.
                    Task { await model.trimWindowIfLong() }
                } else {
                    newBelow += 1
                }
            }
            .onAppear {
                if let last = model.messages.last { proxy.scrollTo(last.id, anchor: .bottom) }
            }
            .onChange(of: scrollTarget) { _, target in
                guard let target else { return }
                scrollTarget = nil
                withAnimation { proxy.scrollTo(target, anchor: .center) }
            }
        }
        .safeAreaInset(edge: .top, spacing: 0) {
            VStack(spacing: 0) {
                pinnedBar(me: me, names: names)
                ConnectionBanner(state: model.connection, syncing: model.isSyncing) { Task { await model.retryNow() } }
                if let error = model.lastError {
                    Text(error)
                        .font(.footnote)
                        .foregroundStyle(.red)
                        .padding(.horizontal)
                        .frame(maxWidth: .infinity, alignment: .leading)
                }
            }
        }
        .safeAreaInset(edge: .bottom, spacing: 0) {
            VStack(alignment: .leading, spacing: 0) {
                if let typing = model.typingLine {
                    Text(typing)
                        .font(.caption)
                        .italic()
                        .foregroundStyle(.secondary)
                        .padding(.horizontal)
                }
                if let progress = model.uploadProgress.values.max() {
                    ProgressView(value: progress).padding(.horizontal)
                }
                MessageInputBar(
                    replyingTo: replyingTo.map { ChatPresentation.firstLine($0.text, max: 80) },
                    editing: editing?.text,
                    onTyping: { Task { await model.userIsTyping() } },
                    onSend: send,
                    onCancel: {
                        replyingTo = nil
                        editing = nil
                    },
                    onAttach: { picked, contentType, _ in
                        // Copied now, while the picker's scope is open; sent from the copy.
                        guard let kept = model.keepFile(picked) else { return }
                        Task { await model.send(file: kept, contentType: contentType, type: .forAttachment(contentType: contentType)) }
                    },
                    mentionCandidates: { draft in await model.mentionCandidates(for: draft) })
            }
            .background(.bar)
        }
        .alert(tr("Report message"), isPresented: Binding(get: { reporting != nil }, set: { if !$0 { reporting = nil } })) {
            TextField(tr("What is wrong with it?"), text: $reportReason)
            Button(tr("Report")) {
                let message = reporting, reason = reportReason
                reporting = nil
                reportReason = ""
                guard let message, !reason.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return }
                Task { await model.report(message, reason: reason) }
            }
            Button(tr("Cancel"), role: .cancel) { reportReason = "" }
        } message: {
            Text(tr("Your organization's admins will see the message and your reason."))
        }
        .navigationTitle(session.list?.rows.first { $0.id == model.conversationId }?.title ?? "")
        .toolbar {
            ToolbarItem(placement: .principal) {
                VStack {
                    HStack(spacing: 4) {
                        // A long name (or a long list of names) ends in "…" rather than pushing
                        // the buttons off a phone's bar.
                        Text(session.list?.rows.first { $0.id == model.conversationId }?.title ?? "")
                            .font(.headline)
                            .lineLimit(1)
                            .truncationMode(.tail)
                        if conversation?.muted == true {
                            Image(systemName: "bell.slash.fill")
                                .font(.caption)
                                .foregroundStyle(.secondary)
                                .accessibilityLabel(tr("Muted"))
                        }
                    }
                    if let conversation {
                        Text(ChatPresentation.subtitle(conversation, me: me, users: session.users, typing: model.typingLine))
                            .font(.caption)
                            .lineLimit(1)
                            .foregroundStyle(.secondary)
                    }
                }
            }
            ToolbarItem(placement: .primaryAction) {
                Menu {
                    let muted = conversation?.muted == true
                    Button {
                        Task { await model.setMuted(!muted) }
                    } label: {
                        // Muted: no notifications except mentions; unread still counts.
                        Label(muted ? tr("Unmute") : tr("Mute"), systemImage: muted ? "bell" : "bell.slash")
                    }
                    .disabled(conversation == nil)
                    Button {
                        searching = true
                    } label: {
                        Label(tr("Search"), systemImage: "magnifyingglass")
                    }
                    if conversation?.type == .group {
                        Button {
                            managingGroup = true
                        } label: {
                            Label(tr("Members"), systemImage: "person.3")
                        }
                    }
                } label: {
                    Label(tr("Chat options"), systemImage: "ellipsis.circle")
                }
            }
        }
        .sheet(item: $forwarding) { message in
            ForwardSheet(session: session, from: model.conversationId) { target in
                Task { await model.forward(message, to: target) }
            }
        }
        .sheet(item: $saving) { message in
            SaveAttachmentSheet(model: model, message: message)
        }
        .sheet(isPresented: $searching) {
            ChatSearchSheet(model: model, names: session.names)
        }
        .opensImagesFullScreen($viewing)
        .sheet(isPresented: $managingGroup) {
            GroupSheet(session: session, conversationId: model.conversationId)
        }
        .navigationDestination(item: $threadRoot) { rootId in
            Group {
                if let client = session.client {
                    ThreadView(
                        model: ThreadModel(client: client, conversationId: model.conversationId, rootId: rootId),
                        chat: model, session: session, registry: registry)
                }
            }
        }
        .task {
            // Back from a thread the model is still running.
            guard !isRunning else { return }
            isRunning = true
            await model.start()
        }
        .onDisappear {
            // A thread pushed over the chat is still this conversation: it stays focused (its
            // notifications quiet) and followed, and the timeline is as it was on coming back.
            guard threadRoot == nil else { return }
            isRunning = false
            model.stop()
        }
    }

    /// "📌 Ada: the rules  (3 pinned)" under the title; a tap shows the newest pin.
    @ViewBuilder private func pinnedBar(me: EntityID, names: NameBook) -> some View {
        if let line = ChatPresentation.pinnedLine(model.pinned, me: me, names: { names.name($0) }) {
            Button(action: showPinned) {
                Text(line)
                    .font(.footnote)
                    .lineLimit(1)
                    .frame(maxWidth: .infinity, alignment: .leading)
                    .padding(.horizontal)
                    .padding(.vertical, 6)
                    .contentShape(Rectangle())
            }
            .buttonStyle(.plain)
            .background(.bar)
            .accessibilityLabel(tr("Pinned: \(line)"))
            .accessibilityHint(tr("Shows the pinned message"))
            Divider()
        }
    }

    private var actions: MessageActions {
        MessageActions(
            reply: { replyingTo = $0; editing = nil },
            edit: { editing = $0; replyingTo = nil },
            react: { message, emoji in Task { await model.react(message, emoji: emoji) } },
            unreact: { message, emoji in Task { await model.unreact(message, emoji: emoji) } },
            resend: { message in Task { await model.resend(message) } },
            discard: { message in Task { await model.discard(message) } },
            revoke: { message in Task { await model.revoke(message) } },
            deleteForMe: { message in Task { await model.deleteForMe(message) } },
            openThread: { message in
                guard let root = message.serverId else { return }
                threadRoot = root
            },
            pin: { message, pinned in Task { await model.setPinned(pinned, message) } },
            report: { reporting = $0 },
            block: { message, blocked in Task { await model.setBlocked(blocked, senderOf: message) } },
            forward: { forwarding = $0 },
            save: { saving = $0 })
    }

    private func send(_ text: String) {
        let reply = replyingTo, edit = editing
        replyingTo = nil
        editing = nil
        let previous = lastSend
        lastSend = Task {
            await previous?.value
            if let edit {
                await model.edit(edit, text: text)
            } else {
                let mentions = await model.mentions(in: text)
                await model.send(text, replyingTo: reply, mentions: mentions)
            }
        }
    }

    /// The pinned bar was tapped: its message on screen, paging back for it when it is older
    /// than the loaded window (a bounded number of pages); a reply in a thread opens the thread.
    private func showPinned() {
        guard let pin = model.pinned.max(by: { ($0.pinnedAt ?? .distantPast) < ($1.pinnedAt ?? .distantPast) }) else { return }
        if let root = pin.threadRootId {
            threadRoot = root
            return
        }
        Task {
            var pages = 0
            while !model.messages.contains(where: { $0.id == pin.id }), model.canLoadOlder, pages < 20 {
                await model.loadOlder()
                pages += 1
            }
            if model.messages.contains(where: { $0.id == pin.id }) { scrollTarget = pin.id }
        }
    }

    /// Read receipts for what is on screen (the SDK batches them).
    private func report() {
        let shown = Array(visible.values)
        Task { await model.messagesBecameVisible(shown) }
    }
}

#endif
