import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// `parley chat` in a real terminal (tmux) resized again and again while messages arrive, then
/// stopped by each signal a terminal program gets: it must keep working through the resizes
/// and leave the terminal as it found it (cooked mode, echo, the main screen) on SIGTERM,
/// SIGHUP and SIGINT. Its SIGWINCH and stop handlers once ran isolated to the main actor on a
/// Dispatch queue and trapped: every resize and every SIGTERM crashed the client (exit 132)
/// and left the terminal raw.
@Suite(.serialized, .needs("tmux")) struct TerminalSignalsEndToEndTests {
    typealias Tmux = TerminalClientEndToEndTests.Tmux

    /// The client, then (once it has exited) its status and the terminal's modes as `stty` reads them.
    static func chatThenModes(_ profile: String) -> String {
        let binary = ServeProcess.binary.path
        return "\(binary) chat --profile \(profile); echo \"chat exited $?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -e '-*icanon' -e '-*echo' | tr '\\n' ' '; echo; echo 'modes read'; sleep 60"
    }

    /// The process ids whose parent is `parent` (from /proc).
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // "pid (comm) state ppid ...": the comm may hold spaces, so read after its ')'.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }

    /// The `parley chat` process running in a tmux session.
    static func chatProcess(_ tmux: Tmux, _ name: String) throws -> pid_t {
        let shell = try #require(pid_t(try tmux.run(["display-message", "-p", "-t", name, "#{pane_pid}"]).trimmingCharacters(in: .whitespacesAndNewlines)))
        return try #require(children(of: shell).first, "no client process under the pane's shell")
    }

    @Test(.heavy) func resizedRepeatedlyWhileMessagesArriveThenStoppedBySignals() async throws {
        let cast = try await TerminalClientEndToEndTests.AdaAndBob.start(
            "terminal-signals", arguments: ["--rate-limits", "off"], firstMessage: "before any resize")
        defer { cast.server.stop() }
        let (url, ada, bobAPI, direct) = (cast.url, cast.ada, cast.bobAPI, cast.direct)

        let tmux = Tmux()
        defer { tmux.kill() }
        let profile = try TerminalClientEndToEndTests.profile(for: ada, server: url)
        try tmux.start("ada", width: 100, height: 30, command: Self.chatThenModes(profile))
        try await tmux.waitFor("ada", "● online")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "before any resize")

        // Sizes a person drags through, down to unusably small and back, twice; Bob writes
        // between them, so frames are being drawn while the size changes.
        let sizes = [(60, 20), (120, 40), (30, 8), (8, 3), (1, 1), (100, 30), (45, 12), (200, 50)]
        var sent = 0
        for round in 0..<2 {
            for (width, height) in sizes {
                try tmux.run(["resize-window", "-t", "ada", "-x", "\(width)", "-y", "\(height)"])
                sent += 1
                let message = try await bobAPI.send(.init(clientMessageId: "r\(sent)", text: "during resize \(sent)"), to: direct.id)
                // Ada's client took the message in at this size (its receipt reached the
                // server) before the next resize, or it ended.
                try await waitFor("Ada's client to receive message \(sent) at \(width)x\(height)") {
                    let screen = try tmux.screen("ada")
                    if screen.contains("chat exited") || screen.contains("crashed") { return true }
                    let members = try await bobAPI.conversation(direct.id).members
                    return members.contains { $0.userId == ada.user.id && $0.deliveredSeq >= message.seq }
                }
                let screen = try tmux.screen("ada")
                #expect(!screen.contains("chat exited") && !screen.contains("crashed"), "the client ended at \(width)x\(height):\n\(screen)")
                if screen.contains("chat exited") || screen.contains("crashed") { return }
            }
        }
        // Back at a usable size: the newest message is there, and the client still sends.
        try tmux.run(["resize-window", "-t", "ada", "-x", "100", "-y", "30"])
        try await tmux.waitFor("ada", "during resize \(sent)")
        try tmux.type("ada", "still here after resizing")
        try tmux.press("ada", "Enter")
        try await waitFor("Bob to get Ada's message") {
            try await bobAPI.messages(direct.id).messages.contains { $0.text == "still here after resizing" }
        }
        try tmux.save("ada", as: "after-resizes")

        // Each stop signal: the exit status says which, and the terminal is back in cooked mode
        // with echo, on the main screen.
        for (index, (signal, status)) in [(SIGTERM, 143), (SIGHUP, 129), (SIGINT, 130)].enumerated() {
            let name = "stop\(index)"
            try tmux.start(name, width: 90, height: 24, command: Self.chatThenModes(profile))
            try await tmux.waitFor(name, "● online")
            try tmux.run(["resize-window", "-t", name, "-x", "70", "-y", "20"])
            // Drawn again at the new size: the status, at the right edge, is back within 70
            // columns (the pane cut the old frame's at 70).
            try await waitFor("\(name) redrawn at 70 columns") {
                try tmux.screen(name).split(separator: "\n").contains { $0.hasSuffix("● online") && $0.count < 70 }
            }
            let pid = try Self.chatProcess(tmux, name)
            #expect(kill(pid, signal) == 0)
            let after = try await tmux.waitFor(name, "modes read")
            #expect(after.contains("chat exited \(status)"), "the exit status says which signal:\n\(after)")
            #expect(after.contains("icanon") && !after.contains("-icanon"), "line editing restored after signal \(signal):\n\(after)")
            #expect(after.contains("echo") && !after.contains("-echo"), "echo restored after signal \(signal):\n\(after)")
            #expect(!after.contains("Conversations"), "back on the main screen after signal \(signal):\n\(after)")
        }
    }
}
