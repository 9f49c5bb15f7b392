#if canImport(SwiftUI)
import ParleyClient
import SwiftUI
import UniformTypeIdentifiers

/// The input bar: a growing text field, send, a file or photo button, and the strip that says
/// what is being replied to or edited. Every change of the text calls `onTyping` (the SDK
/// debounces what it sends).
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

    @State private var text = ""
    @State private var picking = false
    @FocusState private var focused: Bool

    /// An input bar.
    public init(
        replyingTo: String? = nil, editing: String? = nil, onTyping: @escaping () -> Void = {},
        onSend: @escaping (String) -> Void, onCancel: @escaping () -> Void = {},
        onAttach: ((URL, String, Bool) -> Void)? = nil
    ) {
        self.replyingTo = replyingTo
        self.editing = editing
        self.onTyping = onTyping
        self.onSend = onSend
        self.onCancel = onCancel
        self.onAttach = onAttach
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
        onSend(message)
    }
}

#Preview("Empty, replying, editing") {
    VStack {
        MessageInputBar(onSend: { _ in })
        MessageInputBar(replyingTo: "Ada: Are we still on for the launch review?", onSend: { _ in })
        MessageInputBar(editing: "See you at ten", onSend: { _ in })
    }
}
#endif
