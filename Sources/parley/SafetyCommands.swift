import ArgumentParser
import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTerminal

/// `parley export`: the signed-in user's data as a ZIP file.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Download your data (profile, conversations, the messages you sent, your uploads) as a ZIP file.")
    @OptionGroup var options: ClientOptions
    @Option(name: .shortAndLong, help: "Where to write the ZIP (default parley-export.zip).") var output: String = "parley-export.zip"

    func run() async throws {
        let (_, api) = try options.session()
        let file = URL(fileURLWithPath: output)
        let size = try await clientCall { try await api.exportData(to: file) }
        TerminalOutput.say("wrote \(output) (\(ByteCountFormatter.string(fromByteCount: size, countStyle: .file)))")
    }
}

/// `parley admin …`: an organization's reports, retention and audit log (admins).
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Handle reports, set the message retention, read the audit log (admins).",
        subcommands: [AdminReports.self, AdminRetention.self, AdminAudit.self])
}

/// `parley admin reports [--status open] [--resolve ID | --dismiss ID | --reopen ID]`.
struct AdminReports: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reports", abstract: "List reports, newest first; resolve, dismiss or reopen one.")
    @OptionGroup var options: ClientOptions
    @Option(help: "open, resolved or dismissed (default open; all for every report).") var status: String = "open"
    @Option(help: "Mark this report resolved.") var resolve: String?
    @Option(help: "Mark this report dismissed.") var dismiss: String?
    @Option(help: "Open this report again.") var reopen: String?
    @Option(help: "How many to list (default 50).") var limit: Int = 50

    func run() async throws {
        let (_, api) = try options.session()
        for (id, to) in [(resolve, ReportStatus.resolved), (dismiss, .dismissed), (reopen, .open)] {
            guard let id else { continue }
            guard let reportId = EntityID(id) else { throw fail("not a report id: \(id)") }
            let report = try await clientCall { try await api.setReportStatus(to, of: reportId) }
            TerminalOutput.say("\(report.id) is \(report.status.rawValue)")
        }
        var filter: ReportStatus?
        if status != "all" {
            guard let parsed = ReportStatus(rawValue: status) else { throw fail("--status is open, resolved, dismissed or all") }
            filter = parsed
        }
        let page = try await clientCall { try await api.reports(status: filter, limit: limit) }
        if page.reports.isEmpty { TerminalOutput.say("no \(filter?.rawValue ?? "") reports") }
        for report in page.reports {
            TerminalOutput.say("\(report.id)  \(report.status.rawValue)  \(Terminal.clock(report.createdAt))  by \(report.reporterId)")
            if let user = report.userId { TerminalOutput.say("    user: \(user)") }
            if let message = report.message {
                let text = message.deletedAt != nil ? "(deleted)" : TerminalOutput.inline(message.text)
                TerminalOutput.say("    message \(message.id) in \(message.conversationId): \(text)")
            }
            TerminalOutput.say("    reason: \(TerminalOutput.inline(report.reason))")
        }
        if page.hasMore { TerminalOutput.say("(more: raise --limit)") }
    }
}

/// `parley admin retention [DAYS | off]`.
struct AdminRetention: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention", abstract: "Show the message retention, or set it: a number of days, or off to keep messages for ever.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "Days to keep messages (at least 1), or off.") var days: String?

    func run() async throws {
        let (_, api) = try options.session()
        let organization: Organization
        switch days {
        case nil: organization = try await clientCall { try await api.organization() }
        case "off": organization = try await clientCall { try await api.setMessageRetention(days: nil) }
        case let text?:
            guard let value = Int(text), value >= 1 else { throw fail("retention is a number of days (at least 1) or off") }
            organization = try await clientCall { try await api.setMessageRetention(days: value) }
        }
        TerminalOutput.say(organization.messageRetentionDays.map { "messages are kept \($0) days" } ?? "messages are kept for ever")
    }
}

/// `parley admin audit`.
struct AdminAudit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "audit", abstract: "The organization's admin actions, newest first.")
    @OptionGroup var options: ClientOptions
    @Option(help: "How many to list (default 50).") var limit: Int = 50

    func run() async throws {
        let (_, api) = try options.session()
        for entry in try await clientCall({ try await api.auditLog(limit: limit) }).entries {
            let target = entry.targetId.map { " \(TerminalOutput.inline($0))" } ?? ""
            let detail = entry.detail.map { " (\(TerminalOutput.inline($0)))" } ?? ""
            TerminalOutput.say("\(Terminal.clock(entry.at))  \(entry.actorId)  \(entry.action)\(target)\(detail)")
        }
    }
}

/// `parley block USER-ID [--undo]` and `parley report`.
struct BlockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "block", abstract: "Block someone (no direct messages, typing, presence or notifications from them); --undo ends it; no id lists whom you block.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The user id.") var user: String?
    @Flag(help: "Unblock instead.") var undo = false

    func run() async throws {
        let (_, api) = try options.session()
        if let user {
            guard let id = EntityID(user) else { throw fail("not a user id: \(user)") }
            try await clientCall { undo ? try await api.unblock(id) : try await api.block(id) }
            TerminalOutput.say(undo ? "unblocked \(user)" : "blocked \(user)")
            return
        }
        for blocked in try await clientCall({ try await api.blockedUsers() }) {
            TerminalOutput.say("\(blocked.id)  \(TerminalOutput.inline(blocked.displayName))")
        }
    }
}

/// `parley report --message ID | --user ID REASON`.
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Report a message or a person to your organization's admins.")
    @OptionGroup var options: ClientOptions
    @Option(help: "The message id.") var message: String?
    @Option(help: "The user id.") var user: String?
    @Argument(help: "Why (up to 1000 characters).") var reason: String

    func run() async throws {
        let (_, api) = try options.session()
        let messageId = try message.map { text -> EntityID in
            guard let id = EntityID(text) else { throw fail("not a message id: \(text)") }
            return id
        }
        let userId = try user.map { text -> EntityID in
            guard let id = EntityID(text) else { throw fail("not a user id: \(text)") }
            return id
        }
        let id = try await clientCall { try await api.report(messageId: messageId, userId: userId, reason: reason) }
        TerminalOutput.say("reported (\(id))")
    }
}
