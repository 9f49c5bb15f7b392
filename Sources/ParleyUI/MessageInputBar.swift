#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI
import UniformTypeIdentifiers

/// The input bar: a growing text field, send, a file or photo button, the strip that says
/// what is being replied to or edited, and while an "@" word is typed the people it may mean
/// (a tap completes it). Every change of the text calls `onTyping` (the SDK debounces what it
/// sends).
public struct MessageInputBar: View {
    /// The quoted line of the message being replied to, if any.
    public let replyingTo: String?
    /// The text of the message being edited, if any (put into the field).
    public let editing: String?
    /// Called on every change of the text.
    public let onTyping: () -> Void
    /// Called with the text to send (trimmed, never empty).
    public let onSend: (String) -> Void
    /// Called when the reply or edit is cancelled.
    public let onCancel: () -> Void
    /// Called with a picked file, its content type and whether it is an image; nil hides the
    /// button (an app can put its own PhotosPicker beside the bar instead).
    public let onAttach: ((URL, String, Bool) -> Void)?
    /// Who the "@" word at the end of the draft may mean (``ChatModel/mentionCandidates(for:)``);
    /// nil turns "@" completion off.
    public let mentionCandidates: ((String) async -> [(id: EntityID, name: String)])?

    @State private var text = ""
    @State private var candidates: [MentionChoice] = []
    @State private var picking = false
    @FocusState private var focused: Bool

    /// An input bar.
    public init(
        replyingTo: String? = nil, editing: String? = nil, onTyping: @escaping () -> Void = {},
        onSend: @escaping (String) -> Void, onCancel: @escaping () -> Void = {},
        onAttach: ((URL, String, Bool) -> Void)? = nil,
        mentionCandidates: ((String) async -> [(id: EntityID, name: String)])? = nil
    ) {
        self.replyingTo = replyingTo
        self.editing = editing
        self.onTyping = onTyping
        self.onSend = onSend
        self.onCancel = onCancel
        self.onAttach = onAttach
        self.mentionCandidates = mentionCandidates
    }

    private var trimmed: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// The bar.
    public var body: some View {
        VStack(spacing: 6) {
            if let line = replyingTo ?? editing.map({ _ in "Editing your message" }) {
                HStack {
                    Image(systemName: replyingTo != nil ? "arrowshape.turn.up.left" : "pencil")
                    Text(line).lineLimit(1)
                    Spacer()
                    Button {
                        text = ""
                        onCancel()
                    } label: {
                        Image(systemName: "xmark.circle.fill")
                    }
                    .accessibilityLabel("Cancel")
                }
                .font(.caption)
                .foregroundStyle(.secondary)
            }
            if !candidates.isEmpty {
                ScrollView(.horizontal, showsIndicators: false) {
                    HStack(spacing: 6) {
                        ForEach(candidates) { candidate in
                            Button("@" + candidate.name) { complete(with: candidate) }
                                .buttonStyle(.bordered)
                                .controlSize(.small)
                                .accessibilityLabel("Mention \(candidate.name)")
                        }
                    }
                }
            }
            HStack(alignment: .bottom, spacing: 8) {
                if onAttach != nil {
                    Button {
                        picking = true
                    } label: {
                        Image(systemName: "paperclip")
                    }
                    .accessibilityLabel("Attach a file")
                }
                TextField("Message", text: $text, axis: .vertical)
                    .lineLimit(1...6)
                    .textFieldStyle(.roundedBorder)
                    .focused($focused)
                    .onChange(of: text) { _, newValue in
                        if !newValue.isEmpty { onTyping() }
                    }
                    .onSubmit(send)
                Button(action: send) {
                    Image(systemName: editing == nil ? "arrow.up.circle.fill" : "checkmark.circle.fill")
                        .font(.title2)
                }
                .disabled(trimmed.isEmpty)
                .accessibilityLabel(editing == nil ? "Send" : "Save the edit")
            }
        }
        .padding(.horizontal)
        .padding(.vertical, 8)
        .task(id: text) {
            // Asked again as the draft changes; a change cancels the question before it.
            guard let mentionCandidates, ChatPresentation.mentionQuery(in: text) != nil else {
                if !candidates.isEmpty { candidates = [] }
                return
            }
            let found = await mentionCandidates(text)
            guard !Task.isCancelled else { return }
            candidates = found.map { MentionChoice(id: $0.id, name: $0.name) }
        }
        .onChange(of: editing) { _, newValue in
            if let newValue {
                text = newValue
                focused = true
            }
        }
        .fileImporter(isPresented: $picking, allowedContentTypes: [.item]) { result in
            guard case .success(let picked) = result, let onAttach else { return }
            // The picked file is readable only while its security scope is open: `onAttach`
            // runs inside it and hands the file to the SDK, which keeps a copy of its own (the
            // outbox uploads later, and again after a restart).
            let scoped = picked.startAccessingSecurityScopedResource()
            defer { if scoped { picked.stopAccessingSecurityScopedResource() } }
            let type = UTType(filenameExtension: picked.pathExtension) ?? .data
            onAttach(picked, type.preferredMIMEType ?? "application/octet-stream", type.conforms(to: .image))
        }
    }

    private func send() {
        let message = trimmed
        guard !message.isEmpty else { return }
        text = ""
        candidates = []
        onSend(message)
    }

    /// Replaces the "@" word being typed with the chosen name.
    private func complete(with candidate: MentionChoice) {
        text = ChatPresentation.completingMention(text, with: candidate.name)
        candidates = []
        focused = true
    }
}

/// One person an "@" word may mean, as the completion strip lists them.
private struct MentionChoice: Identifiable {
    let id: EntityID
    let name: String
}

#Preview("Empty, replying, editing") {
    VStack {
        MessageInputBar(onSend: { _ in })
        MessageInputBar(replyingTo: "Ada: Are we still on for the launch review?", onSend: { _ in })
        MessageInputBar(editing: "See you at ten", onSend: { _ in })
        MessageInputBar(onSend: { _ in }, mentionCandidates: { _ in [(id: EntityID(), name: "Ada Lovelace"), (id: EntityID(), name: "Alan Turing")] })
    }
}
#endif
