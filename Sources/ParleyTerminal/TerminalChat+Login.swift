import Foundation
import ParleyClient
import ParleyProtocol

/// Signing in from inside the client: one question at a time on the input line.
public struct LoginFlow: Sendable, Equatable {
    /// The questions, in order; `displayName` and `invite` are asked only when registering.
    public enum Step: Sendable, Equatable { case choice, organization, email, password, displayName, invite }

    /// The current question.
    public var step: Step = .choice
    /// Whether the user chose to register rather than log in.
    public var registering = false
    /// The organization given (trimmed).
    public var organization = ""
    /// The email given (trimmed).
    public var email = ""
    /// The password given, as typed (not trimmed).
    public var password = ""
    /// The display name given (trimmed); asked only when registering.
    public var displayName = ""
    /// The invite code given (trimmed); nil when left empty (a new organization, or one that
    /// admits the email's domain).
    public var inviteCode: String?

    /// A flow at its first question, with no answers.
    public init() {}

    /// The question for the current step, in the language of `ParleyStrings.locale` (the
    /// answers to the first stay "l" and "r" in every language).
    public var prompt: String {
        switch step {
        case .choice: TerminalStrings.text("Sign in: (l)og in or (r)egister?")
        case .organization: TerminalStrings.text("Organization")
        case .email: TerminalStrings.text("Email")
        case .password: registering ? TerminalStrings.text("Password (8+ characters)") : TerminalStrings.text("Password")
        case .displayName: TerminalStrings.text("Your name")
        case .invite: TerminalStrings.text("Invite code (Enter for none)")
        }
    }

    /// Takes an answer; returns true when every answer is in.
    public mutating func answer(_ text: String) -> Bool {
        // A pasted answer may end with a line break (a copied line): it is never part of it.
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch step {
        case .choice:
            switch value.lowercased() {
            case "l", "login", "log in": registering = false
            case "r", "register": registering = true
            default: return false
            }
            step = .organization
        case .organization:
            guard !value.isEmpty else { return false }
            organization = value
            step = .email
        case .email:
            guard value.contains("@") else { return false }
            email = value
            step = .password
        case .password:
            let typed = text.trimmingCharacters(in: .newlines)
            guard !typed.isEmpty else { return false }
            password = typed
            if registering { step = .displayName } else { return true }
        case .displayName:
            guard !value.isEmpty else { return false }
            displayName = value
            step = .invite
        case .invite:
            inviteCode = value.isEmpty ? nil : value
            return true
        }
        return false
    }
}

extension TerminalChat {
    func beginLogin() {
        login = LoginFlow()
        showLoginStep()
    }

    private func showLoginStep() {
        guard let login else { return }
        let server = configuration.serverURL.absoluteString
        screen.account = TerminalStrings.text("not signed in · {server}", ["server": server])
        screen.showsConnection = false
        screen.chatTitle = TerminalStrings.text("Welcome to Parley")
        screen.chatSubtitle = ""
        screen.timeline = []
        screen.overlayTitle = TerminalStrings.text("Sign in to {server}", ["server": server])
        var lines = [
            TerminalStrings.text("Answer on the line below and press Enter."),
            "",
            login.registering ? TerminalStrings.text("Registering") : (login.step == .choice ? "" : TerminalStrings.text("Logging in")),
        ]
        if !login.organization.isEmpty {
            lines.append(TerminalStrings.text("Organization: {organization}", ["organization": login.organization]))
        }
        if !login.email.isEmpty { lines.append(TerminalStrings.text("Email: {email}", ["email": login.email])) }
        if !login.displayName.isEmpty { lines.append(TerminalStrings.text("Name: {name}", ["name": login.displayName])) }
        if login.step == .invite {
            lines += [
                "", TerminalStrings.text("Joining an organization takes an invite from"),
                TerminalStrings.text("its admin (`parley invite`); a new one needs none."),
            ]
        }
        screen.overlay = lines
        screen.inputLabel = login.prompt
        screen.masked = login.step == .password
        screen.focus = .input
    }

    func handleLogin(_ key: Key) async {
        guard var flow = login else { return }
        switch key {
        case .enter:
            let answer = screen.input.submit()
            let complete = flow.answer(answer)
            login = flow
            if complete {
                await signIn(flow)
            } else {
                showLoginStep()
            }
        case .escape:
            beginLogin()
        default:
            screen.input.handle(key)
        }
    }

    private func signIn(_ flow: LoginFlow) async {
        screen.status = flow.registering ? TerminalStrings.text("Registering…") : TerminalStrings.text("Logging in…")
        refresh()
        let api = ParleyAPI(baseURL: configuration.serverURL, trust: configuration.trust)
        do {
            let auth = flow.registering
                ? try await api.register(.init(
                    organization: flow.organization, email: flow.email, password: flow.password, displayName: flow.displayName,
                    inviteCode: flow.inviteCode))
                : try await api.login(.init(organization: flow.organization, email: flow.email, password: flow.password))
            let session = Session(token: auth.token, user: auth.user, refreshToken: auth.refreshToken, expiresAt: auth.expiresAt)
            configuration.onSignedIn(session)
            login = nil
            screen = ChatScreen()
            await start(session)
        } catch {
            var retry = LoginFlow()
            retry.registering = flow.registering
            retry.organization = flow.organization
            retry.email = flow.email
            retry.step = .password
            login = retry
            // A sentence in the person's language ("Wrong email or password."), not a code.
            screen.status = ClientError.readableSignIn(error)
            showLoginStep()
        }
    }
}
