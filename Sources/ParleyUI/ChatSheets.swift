#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI

/// The conversations a message can be forwarded to (all but the one it is in), by the list's
/// order and titles; picking one forwards it and closes the sheet.
struct ForwardSheet: View {
    let session: ChatSession
    let from: EntityID
    let forward: (EntityID) -> Void
    @Environment(\.dismiss) private var dismiss

    init(session: ChatSession, from: EntityID, forward: @escaping (EntityID) -> Void) {
        self.session = session
        self.from = from
        self.forward = forward
    }

    var body: some View {
        NavigationStack {
            List(session.list?.rows.filter { $0.id != from } ?? []) { row in
                Button(row.title) {
                    forward(row.id)
                    dismiss()
                }
            }
            .overlay {
                if session.list?.rows.contains(where: { $0.id != from }) != true {
                    ContentUnavailableView(tr("No other conversations"), systemImage: "bubble.left.and.bubble.right")
                }
            }
            .navigationTitle(tr("Forward to"))
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button(tr("Cancel")) { dismiss() } }
            }
        }
    }
}

/// A message's attachment written to a file of its own name, then handed to the system's share
/// sheet (Save to Files, AirDrop, another app).
struct SaveAttachmentSheet: View {
    let model: ChatModel
    let message: LocalMessage
    @Environment(\.dismiss) private var dismiss
    @State private var file: URL?
    @State private var failed = false

    init(model: ChatModel, message: LocalMessage) {
        self.model = model
        self.message = message
    }

    var body: some View {
        NavigationStack {
            VStack(spacing: 16) {
                Text(message.attachment.map(ChatPresentation.attachmentLine) ?? "")
                if let file {
                    ShareLink(item: file) {
                        Label(tr("Save or share"), systemImage: "square.and.arrow.up")
                    }
                    .buttonStyle(.borderedProminent)
                } else if failed {
                    Text(model.lastError ?? tr("The file could not be downloaded.")).foregroundStyle(.red)
                } else {
                    ProgressView(tr("Downloading…"))
                }
            }
            .padding()
            .navigationTitle(tr("Save"))
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button(tr("Done")) { dismiss() } }
            }
            .task { await download() }
        }
    }

    private func download() async {
        let name = message.attachment?.name ?? "attachment"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString, isDirectory: true)
        let target = folder.appendingPathComponent(name.isEmpty ? "attachment" : name)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        await model.save(message, to: target)
        if FileManager.default.fileExists(atPath: target.path) { file = target } else { failed = true }
    }
}

/// The conversation's messages that match what is typed, newest first, as
/// ``ChatPresentation/searchLine(_:sender:calendar:)`` writes them.
struct ChatSearchSheet: View {
    let model: ChatModel
    let names: NameBook
    @Environment(\.dismiss) private var dismiss
    @State private var query = ""
    @State private var results: [SearchResult] = []

    init(model: ChatModel, names: NameBook) {
        self.model = model
        self.names = names
    }

    var body: some View {
        NavigationStack {
            List(results, id: \.message.id) { result in
                Text(ChatPresentation.searchLine(result, sender: names.name(result.message.senderId) ?? tr("Someone")))
                    .lineLimit(3)
            }
            .overlay {
                if results.isEmpty, !query.isEmpty {
                    ContentUnavailableView.search(text: query)
                }
            }
            .searchable(text: $query, prompt: tr("Search this conversation"))
            .task(id: query) {
                // Asked 0.3 s after the last keystroke, not on each.
                try? await Task.sleep(for: .milliseconds(300))
                guard !Task.isCancelled else { return }
                let text = query.trimmingCharacters(in: .whitespaces)
                results = text.isEmpty ? [] : await model.search(text)
            }
            .navigationTitle(tr("Search"))
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button(tr("Done")) { dismiss() } }
            }
        }
    }
}

/// A new group: a name and the people in it, picked from the organization's directory.
struct NewGroupView: View {
    let session: ChatSession
    let created: (EntityID) -> Void
    @Environment(\.dismiss) private var dismiss
    @State private var name = ""
    @State private var chosen: Set<EntityID> = []
    @State private var creating = false

    init(session: ChatSession, created: @escaping (EntityID) -> Void) {
        self.session = session
        self.created = created
    }

    private var people: [User] {
        let me = session.user?.id
        return (session.directory?.users ?? []).filter { $0.id != me }
    }

    var body: some View {
        NavigationStack {
            List {
                Section { TextField(tr("Group name"), text: $name) }
                Section(tr("People")) {
                    ForEach(people) { person in
                        Button {
                            if chosen.contains(person.id) { chosen.remove(person.id) } else { chosen.insert(person.id) }
                        } label: {
                            HStack {
                                AvatarView(initials: ChatPresentation.initials(person.displayName), presence: nil, picture: person.avatarUrl, size: 32)
                                Text(person.displayName)
                                Spacer()
                                if chosen.contains(person.id) { Image(systemName: "checkmark").foregroundStyle(Color.accentColor) }
                            }
                        }
                        .accessibilityAddTraits(chosen.contains(person.id) ? .isSelected : [])
                    }
                }
                if let error = session.error {
                    Section { Text(error).foregroundStyle(.red) }
                }
            }
            .navigationTitle(tr("New group"))
            .toolbar {
                ToolbarItem(placement: .cancellationAction) { Button(tr("Cancel")) { dismiss() } }
                ToolbarItem(placement: .confirmationAction) {
                    Button(tr("Create")) {
                        creating = true
                        Task {
                            let id = await session.groupConversation(named: name, with: Array(chosen))
                            creating = false
                            if let id {
                                created(id)
                                dismiss()
                            }
                        }
                    }
                    .disabled(creating || chosen.isEmpty || name.trimmingCharacters(in: .whitespaces).isEmpty)
                }
            }
        }
    }
}
/// A group's name and members: rename it, add people from the directory, take someone out,
/// leave it. Each change is the session's (``ChatSession/renameGroup(_:to:)`` and the rest);
/// a refusal shows the server's reason.
struct GroupSheet: View {
    let session: ChatSession
    let conversationId: EntityID
    @Environment(\.dismiss) private var dismiss
    @State private var name = ""
    @State private var working = false

    init(session: ChatSession, conversationId: EntityID) {
        self.session = session
        self.conversationId = conversationId
    }

    private var conversation: Conversation? { session.list?.rows.first { $0.id == conversationId }?.conversation }

    private var members: [EntityID] { conversation?.participantIds ?? [] }

    private var others: [User] {
        let inside = Set(members)
        return (session.directory?.users ?? []).filter { !inside.contains($0.id) }
    }

    var body: some View {
        NavigationStack {
            List {
                Section(tr("Name")) {
                    TextField(tr("Group name"), text: $name)
                    Button(tr("Rename")) { run { await session.renameGroup(conversationId, to: name) } }
                        .disabled(name.trimmingCharacters(in: .whitespaces).isEmpty || name == conversation?.name)
                }
                Section(tr("Members")) {
                    ForEach(members, id: \.self) { id in
                        HStack {
                            person(id)
                            Spacer()
                            if id != session.user?.id {
                                Button(tr("Remove"), role: .destructive) { run { await session.removeMember(id, from: conversationId) } }
                                    .buttonStyle(.borderless)
                            }
                        }
                    }
                }
                if !others.isEmpty {
                    Section(tr("Add people")) {
                        ForEach(others) { user in
                            Button {
                                run { await session.addMembers([user.id], to: conversationId) }
                            } label: {
                                HStack {
                                    person(user.id)
                                    Spacer()
                                    Image(systemName: "plus.circle")
                                }
                            }
                        }
                    }
                }
                Section {
                    Button(tr("Leave group"), role: .destructive) {
                        run {
                            let left = await session.leaveGroup(conversationId)
                            if left { dismiss() }
                            return left
                        }
                    }
                }
                if let error = session.error {
                    Section { Text(error).foregroundStyle(.red) }
                }
            }
            .disabled(working)
            .navigationTitle(conversation?.name ?? tr("Group"))
            .toolbar {
                ToolbarItem(placement: .confirmationAction) { Button(tr("Done")) { dismiss() } }
            }
            .onAppear { name = conversation?.name ?? "" }
        }
    }

    private func person(_ id: EntityID) -> some View {
        let user = session.users[id]
        let mine = session.user?.displayName ?? tr("You")
        let shown = id == session.user?.id ? tr("\(mine) (you)") : user?.displayName ?? tr("Someone")
        return HStack {
            AvatarView(initials: ChatPresentation.initials(user?.displayName ?? shown), presence: nil, picture: user?.avatarUrl, size: 32)
            Text(shown)
        }
    }

    private func run(_ change: @escaping @MainActor () async -> Bool) {
        working = true
        Task {
            _ = await change()
            working = false
        }
    }
}
#endif
