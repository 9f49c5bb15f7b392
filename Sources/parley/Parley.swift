import ArgumentParser
import Foundation
import ParleyTerminal

/// The `parley` command line: run the server, try it from a terminal, benchmark it.
@main
struct Parley: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Parley: real-time messaging that never loses or duplicates a message.",
        subcommands: [
            Serve.self, Register.self, Verify.self, Login.self, InviteCommand.self, Members.self, Users.self, Conversations.self, OpenDirect.self,
            Chat.self, OpenGroup.self, Send.self, Sync.self, History.self, Tail.self, Sessions.self, BlockCommand.self, ReportCommand.self, ExportCommand.self, AdminCommand.self, Bench.self, Keys.self,
            BackupCommand.self, RestoreCommand.self,
        ])
}

/// Reads an option, then an environment variable, then a default.
func setting(_ value: String?, env name: String, default fallback: String) -> String {
    if let value { return value }
    if let fromEnvironment = ProcessInfo.processInfo.environment[name], !fromEnvironment.isEmpty { return fromEnvironment }
    return fallback
}

/// Prints a one-line reason on stderr and exits non-zero.
func fail(_ message: String, code: Int32 = 1) -> ExitCode {
    FileHandle.standardError.write(Data("parley: \(TerminalOutput.safe(message))\n".utf8))
    return ExitCode(code)
}

/// What the client commands print: much of it is other people's text (names, messages, group
/// names, a server's reasons), which must reach the user's terminal as characters only.
///
/// Everything goes through the full-screen client's sanitiser (``TerminalText/sanitize(_:keepingNewlines:)``):
/// C0 and C1 controls (ESC and with it every CSI, OSC and clipboard sequence), DEL and the
/// bidirectional overrides become "\u{FFFD}", whatever the caller built the line from.
enum TerminalOutput {
    /// `text` with every character that could steer a terminal made inert; line breaks kept.
    static func safe(_ text: String) -> String {
        TerminalText.sanitize(TerminalText.droppingCarriageReturnsBeforeLineFeeds(text), keepingNewlines: true)
    }

    /// Someone's text for one line of output: inert, with each line break shown as "↵".
    static func inline(_ text: String) -> String {
        TerminalText.sanitize(TerminalText.droppingCarriageReturnsBeforeLineFeeds(text).replacingOccurrences(of: "\n", with: " ↵ "))
    }

    /// Someone's text over several lines: inert, every line after the first indented by
    /// `indent`, so no line of it can pass for a line of the command's own output.
    static func block(_ text: String, indent: String) -> String {
        safe(text).replacingOccurrences(of: "\n", with: "\n" + indent)
    }

    /// Prints one line (written at once, so a pipe sees each as it comes), made inert.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((safe(line) + "\n").utf8))
    }
}
