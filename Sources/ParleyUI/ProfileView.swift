#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import PhotosUI
import SwiftUI
import UniformTypeIdentifiers

/// The signed-in user's own profile: their picture (chosen from Photos, made a small JPEG by
/// ``ChatSession/setPicture(_:contentType:)``, or removed) and their display name. Everyone in
/// the organization sees a change at once; a refusal shows the server's reason.
struct ProfileView: View {
    let session: ChatSession
    @Environment(\.dismiss) private var dismiss
    @State private var name = ""
    @State private var photo: PhotosPickerItem?
    @State private var working = false

    /// The profile of the session's user.
    init(session: ChatSession) { self.session = session }

    var body: some View {
        NavigationStack {
            Form {
                Section {
                    HStack(spacing: 16) {
                        AvatarView(
                            initials: ChatPresentation.initials(session.user?.displayName ?? ""), presence: nil,
                            picture: session.user?.avatarUrl, size: 72)
                        VStack(alignment: .leading, spacing: 8) {
                            PhotosPicker(selection: $photo, matching: .images) {
                                Label(tr("Choose a picture"), systemImage: "photo")
                            }
                            if session.user?.avatarUrl != nil {
                                Button(tr("Remove picture"), role: .destructive) {
                                    run { await session.removePicture() }
                                }
                            }
                        }
                    }
                }
                Section(tr("Display name")) {
                    TextField(tr("Display name"), text: $name)
                        .onSubmit(saveName)
                    Button(tr("Save name"), action: saveName)
                        .disabled(working || name.trimmingCharacters(in: .whitespaces).isEmpty || name == session.user?.displayName)
                }
                if let error = session.profileError {
                    Section { Text(error).foregroundStyle(.red) }
                }
            }
            .disabled(working)
            .navigationTitle(tr("Profile"))
            .toolbar {
                ToolbarItem(placement: .confirmationAction) {
                    Button(tr("Done")) { dismiss() }
                }
            }
            .onAppear { name = session.user?.displayName ?? "" }
            .onChange(of: photo) { _, item in
                guard let item else { return }
                photo = nil
                let type = item.supportedContentTypes.first?.preferredMIMEType ?? "image/jpeg"
                run {
                    guard let data = try? await item.loadTransferable(type: Data.self) else { return false }
                    return await session.setPicture(data, contentType: type)
                }
            }
        }
    }

    private func saveName() {
        let wanted = name
        run { await session.rename(to: wanted) }
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
