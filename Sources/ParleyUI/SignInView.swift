#if canImport(SwiftUI)
import ParleyClient
import SwiftUI

/// Sign in to an organization, or create an account (a new organization, or joining one with
/// an invite code). The session says why a try failed.
public struct SignInView: View {
    /// The session the form signs into.
    public let session: ChatSession
    @State private var creatingAccount = false
    @State private var organization = ""
    @State private var email = ""
    @State private var password = ""
    @State private var displayName = ""
    @State private var inviteCode = ""

    /// A form for a session.
    public init(session: ChatSession) {
        self.session = session
    }

    private var canSubmit: Bool {
        let filled = [organization, email, password].allSatisfy { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        return filled && (!creatingAccount || !displayName.trimmingCharacters(in: .whitespaces).isEmpty)
            && session.state != .signingIn
    }

    /// The form.
    public var body: some View {
        NavigationStack {
            Form {
                Section {
                    TextField(tr("Organization"), text: $organization)
                        .textContentType(.organizationName)
                    TextField(tr("Email"), text: $email)
                        .textContentType(.emailAddress)
                        .autocorrectionDisabled()
                    #if os(iOS)
                        .textInputAutocapitalization(.never)
                        .keyboardType(.emailAddress)
                    #endif
                    SecureField(tr("Password"), text: $password)
                        .textContentType(creatingAccount ? .newPassword : .password)
                }
                if creatingAccount {
                    Section(tr("Your account")) {
                        TextField(tr("Your name"), text: $displayName)
                            .textContentType(.name)
                        TextField(tr("Invite code (to join an existing organization)"), text: $inviteCode)
                            .autocorrectionDisabled()
                    }
                }
                if let error = session.error {
                    Section {
                        Label(error, systemImage: "exclamationmark.triangle")
                            .foregroundStyle(.red)
                    }
                }
                Section {
                    Button(action: submit) {
                        HStack {
                            Text(creatingAccount ? tr("Create account") : tr("Sign in"))
                            if session.state == .signingIn {
                                Spacer()
                                ProgressView()
                            }
                        }
                    }
                    .disabled(!canSubmit)
                    Button(creatingAccount ? tr("I have an account") : tr("Create an account")) {
                        creatingAccount.toggle()
                    }
                }
            }
            .navigationTitle(creatingAccount ? tr("Create account") : tr("Sign in"))
            .onSubmit(submit)
        }
    }

    private func submit() {
        guard canSubmit else { return }
        let session = self.session
        let (organization, email, password, name, invite) = (organization, email, password, displayName, inviteCode)
        let creating = creatingAccount
        Task {
            if creating {
                await session.register(organization: organization, email: email, password: password, displayName: name, inviteCode: invite)
            } else {
                await session.signIn(organization: organization, email: email, password: password)
            }
        }
    }
}

#Preview {
    SignInView(session: ChatSession(server: URL(fileURLWithPath: "/"), store: PreviewSessionStore(), databaseDirectory: nil))
}

/// A session store that keeps nothing (previews).
struct PreviewSessionStore: SessionStore {
    func load() throws -> AuthResponse? { nil }
    func save(_ session: AuthResponse?) throws {}
}
#endif
