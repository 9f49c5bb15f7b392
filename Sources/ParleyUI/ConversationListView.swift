#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI

/// The conversation list: rows with unread and mention badges, presence and typing, muted rows
/// (grey badge, bell-slash) with "Mute"/"Unmute" on a swipe or the context menu, the connection
/// banner, a "new chat" sheet with the organization's people, the user's profile (name and
/// picture), pull to refresh and signing out.
public struct ConversationListView: View {
    /// The signed-in session (its list, directory and client).
    public let session: ChatSession
    /// The open conversation.
    @Binding public var selection: EntityID?
    @State private var choosingPerson = false
    @State private var editingProfile = false
    @State private var creatingGroup = false
    /// Why the last mute or unmute failed, for the alert.
    @State private var muteError: String?

    /// A list for a session; `selection` is the conversation shown beside or after it.
    public init(session: ChatSession, selection: Binding<EntityID?>) {
        self.session = session
        _selection = selection
    }

    private var items: [ChatPresentation.ListRowItem] {
        guard let list = session.list, let me = session.user?.id else { return [] }
        let users = session.users
        return list.rows.map { ChatPresentation.listRow($0, me: me, users: users, typing: list.typing[$0.id]) }
    }

    /// The list.
    public var body: some View {
        let items = self.items
        List(items, selection: $selection) { item in
            NavigationLink(value: item.id) {
                ConversationRowView(item: item)
            }
            .swipeActions(edge: .trailing) { muteButton(item) }
            .contextMenu { muteButton(item) }
            .onAppear {
                // The last rows on screen: the next older page (a new device has the newest only).
                if item.id == items.last?.id, let list = session.list, list.hasMore {
                    Task { await list.loadMore() }
                }
            }
        }
        .overlay {
            if items.isEmpty {
                ContentUnavailableView {
                    Label(session.list?.isLoading == true ? tr("Loading") : tr("No conversations"), systemImage: "bubble.left.and.bubble.right")
                } description: {
                    Text(ChatPresentation.emptyListText(isLoading: session.list?.isLoading == true))
                }
            }
        }
        .safeAreaInset(edge: .top, spacing: 0) {
            ConnectionBanner(
                state: session.list?.connection ?? .disconnected, syncing: session.list?.isSyncing ?? false,
                outboxCount: session.list?.outboxCount ?? 0) {
                Task { await session.client?.retry() }
            }
        }
        .refreshable {
            await session.client?.synchronize()
        }
        .navigationTitle(tr("Chats"))
        .toolbar {
            ToolbarItem(placement: .primaryAction) {
                Button {
                    choosingPerson = true
                } label: {
                    Label(tr("New chat"), systemImage: "square.and.pencil")
                }
            }
            ToolbarItem(placement: .secondaryAction) {
                Button {
                    creatingGroup = true
                } label: {
                    Label(tr("New group"), systemImage: "person.3")
                }
            }
            ToolbarItem(placement: .secondaryAction) {
                Button {
                    editingProfile = true
                } label: {
                    Label(tr("Profile"), systemImage: "person.crop.circle")
                }
            }
            ToolbarItem(placement: .secondaryAction) {
                Button(tr("Sign out"), role: .destructive) {
                    Task { await session.signOut() }
                }
            }
        }
        .alert(tr("Couldn't change notifications"), isPresented: Binding(get: { muteError != nil }, set: { if !$0 { muteError = nil } })) {
            Button(tr("OK"), role: .cancel) {}
        } message: {
            Text(muteError ?? "")
        }
        .sheet(isPresented: $editingProfile) {
            ProfileView(session: session)
        }
        .sheet(isPresented: $creatingGroup) {
            NewGroupView(session: session) { selection = $0 }
        }
        .sheet(isPresented: $choosingPerson) {
            PeoplePicker(session: session) { userId in
                choosingPerson = false
                Task {
                    if let id = await session.directConversation(with: userId) { selection = id }
                }
            }
        }
    }
}

extension ConversationListView {
    /// "Mute" (no notifications except mentions, on every device) or "Unmute".
    private func muteButton(_ item: ChatPresentation.ListRowItem) -> some View {
        Button {
            setMuted(!item.isMuted, item.id)
        } label: {
            Label(item.isMuted ? tr("Unmute") : tr("Mute"), systemImage: item.isMuted ? "bell" : "bell.slash")
        }
        .tint(.indigo)
    }

    private func setMuted(_ muted: Bool, _ conversationId: EntityID) {
        guard let client = session.client else { return }
        Task {
            do {
                // The row follows when the client's list changes.
                try await client.setMuted(muted, in: conversationId)
            } catch {
                muteError = ClientError.readable(error)
            }
        }
    }
}

/// One row: the picture (or initials) with a presence dot, title, time, preview (or typing), the mention
/// badge "@" and the unread badge (grey, with a bell-slash, when the chat is muted).
public struct ConversationRowView: View {
    /// What the row shows, decided by ``ChatPresentation/listRow(_:me:users:typing:now:calendar:)``.
    public let item: ChatPresentation.ListRowItem

    /// A row for an item.
    public init(item: ChatPresentation.ListRowItem) {
        self.item = item
    }

    /// The row.
    public var body: some View {
        HStack(spacing: 12) {
            AvatarView(initials: item.initials, presence: item.presence, picture: item.picture)
            VStack(alignment: .leading, spacing: 2) {
                HStack(alignment: .firstTextBaseline) {
                    Text(item.title)
                        .font(.headline)
                        .lineLimit(1)
                    Spacer(minLength: 8)
                    Text(item.time)
                        .font(.caption)
                        .foregroundStyle(.secondary)
                }
                HStack(alignment: .firstTextBaseline) {
                    Text(item.preview)
                        .font(.subheadline)
                        .foregroundStyle(item.isTyping ? Color.accentColor : Color.secondary)
                        .italic(item.isTyping)
                        .lineLimit(2)
                    Spacer(minLength: 8)
                    if item.isMuted {
                        Image(systemName: "bell.slash.fill")
                            .font(.caption)
                            .foregroundStyle(.secondary)
                    }
                    // A mention notifies even in a muted chat: its badge keeps the accent.
                    if !item.mentionBadge.isEmpty {
                        BadgeView(text: item.mentionBadge, colour: .accentColor)
                    }
                    if !item.badge.isEmpty {
                        BadgeView(text: item.badge, colour: item.isMuted ? .gray : .accentColor)
                    }
                }
            }
        }
        .padding(.vertical, 4)
        .accessibilityElement(children: .ignore)
        .accessibilityLabel(item.accessibilityLabel)
    }
}

/// A count or "@" in a capsule.
struct BadgeView: View {
    let text: String
    let colour: Color

    var body: some View {
        Text(text)
            .font(.caption.bold())
            .foregroundStyle(.white)
            .padding(.horizontal, 7)
            .padding(.vertical, 2)
            .background(Capsule().fill(colour))
    }
}

/// The organization's people, to start a direct chat with.
struct PeoplePicker: View {
    let session: ChatSession
    let pick: (EntityID) -> Void
    @State private var query = ""
    @Environment(\.dismiss) private var dismiss

    private var people: [User] {
        let me = session.user?.id
        let everyone = (session.directory?.users ?? []).filter { $0.id != me }
        guard !query.isEmpty else { return everyone }
        return everyone.filter { $0.displayName.localizedCaseInsensitiveContains(query) || $0.email.localizedCaseInsensitiveContains(query) }
    }

    var body: some View {
        NavigationStack {
            List(people) { person in
                Button {
                    pick(person.id)
                } label: {
                    HStack {
                        AvatarView(
                            initials: ChatPresentation.initials(person.displayName), presence: person.isOnline ? .online : .offline,
                            picture: person.avatarUrl)
                        VStack(alignment: .leading) {
                            Text(person.displayName)
                            Text(person.email).font(.caption).foregroundStyle(.secondary)
                        }
                    }
                }
            }
            .searchable(text: $query)
            .navigationTitle(tr("New chat"))
            .toolbar {
                // A macOS sheet has no swipe to close: this is its way out (a phone's too).
                ToolbarItem(placement: .cancellationAction) {
                    Button(tr("Cancel")) { dismiss() }
                }
            }
        }
    }
}

#Preview("Rows") {
    let users = PresentationSamples.users()
    let me = PresentationSamples.me.id
    let rows = PresentationSamples.rows()
    List {
        ConversationRowView(item: ChatPresentation.listRow(rows[0], me: me, users: users))
        ConversationRowView(item: ChatPresentation.listRow(rows[1], me: me, users: users))
        ConversationRowView(item: ChatPresentation.listRow(rows[1], me: me, users: users, typing: "Ada is typing…"))
    }
}
#endif
