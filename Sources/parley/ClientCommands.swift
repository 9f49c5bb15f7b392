import ArgumentParser
import Foundation
import ParleyClient
import ParleyProtocol

struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create an account (and the organization if new), then keep the session.")
    @OptionGroup var options: ClientOptions
    @Option var organization: String
    @Option var email: String
    @Option var name: String
    @Option(help: "Invite code from an admin of an existing organization (env PARLEY_INVITE).") var invite: String?

    func run() async throws {
        let url = try options.serverURL()
        guard let password = Terminal.password(prompt: "Password (8+ characters): ") else { throw fail("no password given") }
        let code = setting(invite, env: "PARLEY_INVITE", default: "")
        let outcome = try await clientCall {
            try await options.api(url).registration(
                .init(organization: organization, email: email, password: password, displayName: name, inviteCode: code.isEmpty ? nil : code))
        }
        guard case .registered(let auth) = outcome else {
            if case .verificationSent(let pending) = outcome {
                TerminalOutput.say(
                    "Check your email: we sent a link to \(TerminalOutput.inline(pending.email)). Open it, or run `parley verify TOKEN` with the token it gives, within 24 hours.")
            }
            return
        }
        try Profile(server: url.absoluteString, auth: auth).save(to: options.profileDirectory)
        let role = auth.user.role == .admin ? ", admin of \(organization)" : ""
        TerminalOutput.say("Registered \(TerminalOutput.inline(auth.user.displayName)) <\(TerminalOutput.inline(auth.user.email))> (\(auth.user.id))\(role)")
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Finish joining an organization by your email's domain with the token from the mailed link, then keep the session.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The token from the email (the part after #verify= in its link).") var token: String

    func run() async throws {
        let url = try options.serverURL()
        let auth = try await clientCall { try await options.api(url).verifyEmail(token: token) }
        try Profile(server: url.absoluteString, auth: auth).save(to: options.profileDirectory)
        TerminalOutput.say(
            "Registered \(TerminalOutput.inline(auth.user.displayName)) <\(TerminalOutput.inline(auth.user.email))> (\(auth.user.id))")
    }
}

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Log in and keep the session in the profile folder.")
    @OptionGroup var options: ClientOptions
    @Option var organization: String
    @Option var email: String

    func run() async throws {
        let url = try options.serverURL()
        guard let password = Terminal.password(prompt: "Password: ") else { throw fail("no password given") }
        let auth = try await clientCall {
            try await options.api(url).login(.init(organization: organization, email: email, password: password))
        }
        try Profile(server: url.absoluteString, auth: auth).save(to: options.profileDirectory)
        TerminalOutput.say("Logged in as \(TerminalOutput.inline(auth.user.displayName)) <\(TerminalOutput.inline(auth.user.email))>")
    }
}

struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite", abstract: "Create an invite to your organization (admins) and print its code.")
    @OptionGroup var options: ClientOptions
    @Option(help: "Only this address may use it.") var email: String?
    @Option(name: .customLong("max-uses"), help: "How many people may join with it (default 1).") var maxUses: Int?
    @Option(help: "Hours until it expires (default 168).") var hours: Int?

    func run() async throws {
        let (_, api) = try options.session()
        let invite = try await clientCall { try await api.createInvite(.init(email: email, maxUses: maxUses, expiresInHours: hours)) }
        TerminalOutput.say(invite.code)
    }
}

struct Members: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List your organization's members with their roles; admins change roles and deactivate.")
    @OptionGroup var options: ClientOptions
    @Option(name: .customLong("make-admin"), help: "Make this user id an admin.") var makeAdmin: String?
    @Option(name: .customLong("make-member"), help: "Make this user id a member.") var makeMember: String?
    @Option(help: "Deactivate this user id (their tokens stop working; their messages stay).") var deactivate: String?
    @Option(name: .customLong("sign-out"), help: "End every sign-in of this user id (a stolen laptop); they sign in again with their password.")
    var signOut: String?
    @Option(name: .customLong("allow-domains"), help: "Comma-separated email domains that may join without an invite (\"\" clears).")
    var allowDomains: String?

    func run() async throws {
        let (_, api) = try options.session()
        func id(_ text: String) throws -> EntityID {
            guard let id = EntityID(text) else { throw fail("not a user id: \(text)") }
            return id
        }
        if let makeAdmin { _ = try await clientCall { try await api.setRole(.admin, of: try id(makeAdmin)) } }
        if let makeMember { _ = try await clientCall { try await api.setRole(.member, of: try id(makeMember)) } }
        if let deactivate {
            try await clientCall { try await api.deactivate(try id(deactivate)) }
            TerminalOutput.say("deactivated \(deactivate)")
        }
        if let signOut {
            try await clientCall { try await api.signOut(userId: try id(signOut)) }
            TerminalOutput.say("signed out \(signOut) everywhere")
        }
        if let allowDomains {
            let domains = allowDomains.split(separator: ",").map { String($0) }.filter { !$0.isEmpty }
            let organization = try await clientCall { try await api.setAllowedEmailDomains(domains) }
            TerminalOutput.say("allowed domains: \(organization.allowedEmailDomains.joined(separator: ", "))")
        }
        for user in try await clientCall({ try await api.users() }) {
            TerminalOutput.say("\(user.id)  \(user.role?.rawValue ?? "member")  \(TerminalOutput.inline(user.displayName)) <\(TerminalOutput.inline(user.email))>")
        }
    }
}

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List where you are signed in (devices, browsers, terminals); --end ends one of them.")
    @OptionGroup var options: ClientOptions
    @Option(help: "End this sign-in (its id from the list): a lost phone stops working within seconds.") var end: String?

    func run() async throws {
        let (_, api) = try options.session()
        if let end {
            try await clientCall { try await api.endSignInSession(end) }
            TerminalOutput.say("ended \(end)")
        }
        for session in try await clientCall({ try await api.signInSessions() }) {
            let mark = session.current ? "*" : " "
            TerminalOutput.say(
                "\(mark) \(session.id)  since \(Terminal.clock(session.createdAt))  last used \(Terminal.clock(session.lastUsedAt))  "
                    + TerminalOutput.inline(session.label ?? "unnamed client"))
        }
    }
}

struct Users: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List your organization's people.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "Filter by name or email.") var query: String?

    func run() async throws {
        let (_, api) = try options.session()
        for user in try await clientCall({ try await api.users(matching: query) }) {
            let status = user.isOnline ? "online" : user.lastSeenAt.map { "seen \(Terminal.clock($0))" } ?? "offline"
            TerminalOutput.say("\(user.id)  \(TerminalOutput.inline(user.displayName)) <\(TerminalOutput.inline(user.email))>  \(status)")
        }
    }
}

struct Conversations: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List your conversations, newest activity first.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        let (profile, api) = try options.session()
        let (conversations, people) = try await clientCall { (try await api.conversations(), try await api.users()) }
        let names = Dictionary(uniqueKeysWithValues: people.map { ($0.id, $0.displayName) })
        for conversation in conversations {
            let title = conversation.name ?? conversation.participantIds.filter { $0 != profile.user.id }
                .map { names[$0] ?? "?" }.joined(separator: ", ")
            let unread = conversation.unreadCount > 0 ? "  (\(conversation.unreadCount) unread)" : ""
            let last = conversation.lastMessage.map { "  — \(TerminalOutput.inline(String($0.text.prefix(60))))" } ?? ""
            TerminalOutput.say("\(conversation.id)  [\(conversation.type.rawValue)] \(TerminalOutput.inline(title))\(unread)\(last)")
        }
    }
}

struct OpenDirect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-direct", abstract: "Open the direct conversation with someone; prints its id.")
    @OptionGroup var options: ClientOptions
    @Argument var email: String

    func run() async throws {
        let (_, api) = try options.session()
        let other = try await findUser(email, api: api)
        let conversation = try await clientCall { try await api.createConversation(.init(type: .direct, participantIds: [other.id])) }
        TerminalOutput.say(conversation.id.description)
    }
}

struct OpenGroup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-group", abstract: "Create a group with people by email; prints its id.")
    @OptionGroup var options: ClientOptions
    @Argument var name: String
    @Argument var emails: [String] = []

    func run() async throws {
        let (_, api) = try options.session()
        var ids: [EntityID] = []
        for email in emails { ids.append(try await findUser(email, api: api).id) }
        let conversation = try await clientCall { try await api.createConversation(.init(type: .group, participantIds: ids, name: name)) }
        TerminalOutput.say(conversation.id.description)
    }
}

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a text message; with the server unreachable it is queued for `parley sync`.")
    @OptionGroup var options: ClientOptions
    @Argument var conversationId: String
    @Argument var text: String

    func run() async throws {
        let session = try await SDKSession.open(options)
        let id = try conversation(conversationId)
        // What an earlier run queued waits out its backoff, which ends after that process did:
        // a send now goes now, and the messages it queues behind go first.
        try? await session.client.database.outboxRetryNow()
        let pending = try await clientCall { try await session.client.send(text: text, in: id) }
        await session.client.flushOutbox()
        let message = try await session.client.database.message(
            senderId: session.profile.user.id, clientMessageId: pending.clientMessageId, viewer: session.profile.user.id)
        switch message?.delivery {
        case .failed(let reason)?:
            throw fail("refused: \(reason) (kept as failed; it will not be sent)")
        case .sending?, .notSent?, nil:
            TerminalOutput.say("queued (server unreachable); `parley sync` delivers it")
        default:
            TerminalOutput.say("sent #\(message?.seq ?? 0) \(message?.serverId?.description ?? "")")
        }
    }
}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Deliver queued messages and catch up on every kept conversation.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        let session = try await SDKSession.open(options)
        let before = try await session.client.database.outboxCounts()
        try? await session.refreshDirectory()
        let report = await session.client.synchronize()
        let delivered = before.queued - report.queued - (report.failed - before.failed)
        TerminalOutput.say("delivered \(delivered) queued message\(delivered == 1 ? "" : "s"); \(report.queued) still queued; \(report.failed) refused")
        if report.signInRequired {
            throw fail("the server refused this profile's token; `parley login` again (\(report.queued) message(s) kept queued)")
        }
        if !report.reachedServer, report.queued > 0 {
            throw fail("server unreachable; \(report.queued) message(s) still queued", code: 2)
        }
        if report.queued > 0 { throw fail("\(report.queued) message(s) still queued; the server answered but they could not be sent yet", code: 2) }
        if report.failed > before.failed {
            throw fail("the server refused \(report.failed - before.failed) message(s); `parley history` shows why")
        }
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a conversation's latest messages (cache first).")
    @OptionGroup var options: ClientOptions
    @Argument var conversationId: String
    @Option(help: "How many (1–200).") var limit: Int = 50
    @Flag(help: "Print from the local cache without touching the network.") var offline = false

    func run() async throws {
        guard (1...Limits.messagesPageMax).contains(limit) else { throw fail("--limit must be 1 to \(Limits.messagesPageMax)") }
        let session = try await SDKSession.open(options)
        let id = try conversation(conversationId)
        let me = session.profile.user.id
        let messages: [LocalMessage]
        if offline {
            messages = try await session.client.database.messages(in: id, viewer: me, limit: limit)
            if messages.isEmpty { TerminalOutput.say("(nothing cached for this conversation)") }
        } else {
            try? await session.refreshDirectory()
            messages = try await clientCall { try await session.client.openConversation(id, limit: limit) }
            await session.client.synchronize()
        }
        let fresh = offline ? messages : try await session.client.database.messages(in: id, viewer: me, limit: limit)
        let names = Dictionary(uniqueKeysWithValues: try await session.client.database.users().map { ($0.id, $0.displayName) })
        for message in fresh { TerminalOutput.say(MessageLine.render(message, names: names)) }
    }
}

/// One readable line for a message.
enum MessageLine {
    static func render(_ message: Message, names: [EntityID: String]) -> String {
        render(LocalMessage(message, delivery: .received), names: names)
    }

    static func render(_ message: LocalMessage, names: [EntityID: String]) -> String {
        let who = TerminalOutput.inline(names[message.senderId] ?? String(message.senderId.description.prefix(8)))
        // Continuation lines of a message are indented: none can pass for another message's line.
        let text = TerminalOutput.block(message.text, indent: "    ")
        let body: String = switch message.type {
        case .system: "* \(who) \(text)"
        case .text: "\(who): \(text)"
        default: "\(who): [\(message.type.rawValue)] \(text)"
        }
        let edited = message.editedAt != nil ? " (edited)" : ""
        let deleted = message.deletedAt != nil ? " (deleted)" : ""
        let status: String = switch message.delivery {
        case .sending: " (sending)"
        case .notSent: " (not sent yet; retrying)"
        case .failed(let reason): " (failed: \(TerminalOutput.inline(reason)))"
        case .sent: " ✓"
        case .delivered: " ✓✓"
        case .read: " ✓✓ read"
        case .received: ""
        }
        let number = message.seq.map { "#\($0)" } ?? "#-"
        return "\(number) \(Terminal.clock(message.createdAt)) \(body)\(edited)\(deleted)\(status)"
    }
}

func conversation(_ text: String) throws -> EntityID {
    guard let id = EntityID(text) else { throw fail("not a conversation id: \(text)") }
    return id
}

func findUser(_ email: String, api: ParleyAPI) async throws -> User {
    let wanted = email.trimmingCharacters(in: .whitespaces).lowercased()
    let users = try await clientCall { try await api.users(matching: wanted) }
    guard let user = users.first(where: { $0.email == wanted }) else { throw fail("no user \(wanted) in your organization") }
    return user
}
