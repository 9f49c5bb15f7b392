import ArgumentParser
import Foundation

/// The `parley` command line: run the server, try it from a terminal, benchmark it.
@main
struct Parley: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Parley: real-time messaging that never loses or duplicates a message.",
        subcommands: [
            Serve.self, Register.self, Login.self, InviteCommand.self, Members.self, Users.self, Conversations.self, OpenDirect.self,
            Chat.self, OpenGroup.self, Send.self, Sync.self, History.self, Tail.self, Bench.self, Keys.self,
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
    FileHandle.standardError.write(Data("parley: \(message)\n".utf8))
    return ExitCode(code)
}
