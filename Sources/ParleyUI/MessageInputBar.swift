#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import PhotosUI
import SwiftUI
import UniformTypeIdentifiers

/// The input bar: a growing text field, send, an attach menu (a photo or video from the
/// library, the camera on a phone, any file), the strip that says
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
    /// Called with a picked file (from the Photos library, the camera or the file importer),
    /// its content type and whether it is an image; nil hides the attach menu. A photo or
    /// camera picture is a temporary file, removed once this returns: copy it
    /// (``ParleyClient/ChatModel/keepFile(_:)``) before returning.
    public let onAttach: ((URL, String, Bool) -> Void)?
    /// Who the "@" word at the end of the draft may mean (``ChatModel/mentionCandidates(for:)``);
    /// nil turns "@" completion off.
    public let mentionCandidates: ((String) async -> [(id: EntityID, name: String)])?

    @State private var text = ""
    @State private var candidates: [MentionChoice] = []
    @State private var picking = false
    @State private var pickingPhoto = false
    @State private var photo: PhotosPickerItem?
    @State private var takingPhoto = false
    @State private var photoFailed = false
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
            if let line = replyingTo ?? editing.map({ _ in tr("Editing your message") }) {
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
                    .accessibilityLabel(tr("Cancel"))
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
                                .accessibilityLabel(tr("Mention \(candidate.name)"))
                        }
                    }
                }
            }
            HStack(alignment: .bottom, spacing: 8) {
                if onAttach != nil {
                    Menu {
                        Button {
                            pickingPhoto = true
                        } label: {
                            Label(tr("Photo or video"), systemImage: "photo.on.rectangle")
                        }
                        #if os(iOS)
                        if CameraPicker.isAvailable {
                            Button {
                                takingPhoto = true
                            } label: {
                                Label(tr("Camera"), systemImage: "camera")
                            }
                        }
                        #endif
                        Button {
                            picking = true
                        } label: {
                            Label(tr("File"), systemImage: "doc")
                        }
                    } label: {
                        Image(systemName: "plus.circle").font(.title2)
                    }
                    .accessibilityLabel(tr("Attach a photo, a video or a file"))
                }
                TextField(tr("Message"), text: $text, axis: .vertical)
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
                .accessibilityLabel(editing == nil ? tr("Send") : tr("Save the edit"))
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
        .photosPicker(isPresented: $pickingPhoto, selection: $photo, matching: .any(of: [.images, .videos]))
        .onChange(of: photo) { _, item in
            guard let item else { return }
            photo = nil
            Task {
                guard let media = await PickedMedia.load(item) else {
                    photoFailed = true
                    return
                }
                hand(media)
            }
        }
        #if os(iOS)
        .fullScreenCover(isPresented: $takingPhoto) {
            CameraPicker { data in
                takingPhoto = false
                guard let data else { return }
                guard let media = try? PickedMedia.temporary(data, type: .jpeg) else {
                    photoFailed = true
                    return
                }
                hand(media)
            }
            .ignoresSafeArea()
        }
        #endif
        .alert(tr("The photo could not be loaded"), isPresented: $photoFailed) {
            Button(tr("OK"), role: .cancel) {}
        } message: {
            Text(tr("It may still be downloading from iCloud. Try again in a moment."))
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

    /// Hands a photo or camera picture to `onAttach`, then removes the temporary file.
    private func hand(_ media: PickedMedia) {
        onAttach?(media.file, media.contentType, media.isImage)
        media.discard()
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
