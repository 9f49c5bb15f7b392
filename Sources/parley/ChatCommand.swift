import ArgumentParser
import Foundation
import ParleyClient
import ParleyTerminal

/// `parley chat`: the full-screen terminal client.
struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat in a full-screen terminal client (signs in from inside when the profile has no session).")
    @OptionGroup var options: ClientOptions
    @Flag(name: .customLong("bell"), inversion: .prefixedNo, help: "Ring the terminal's bell for a message in another conversation (PARLEY_BELL=0 turns it off).")
    var bell: Bool = ProcessInfo.processInfo.environment["PARLEY_BELL"] != "0"

    @MainActor
    func run() async throws {
        guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else {
            throw fail("parley chat needs a terminal (for scripts: parley send, parley tail)")
        }
        let directory = options.profileDirectory
        let saved = try? Profile.load(from: directory)
        let explicitServer = options.server != nil || ProcessInfo.processInfo.environment["PARLEY_SERVER"] != nil
        let url: URL
        if let saved, !explicitServer, let savedURL = URL(string: saved.server) {
            url = savedURL
        } else {
            url = try options.serverURL()
        }
        // A session for another server is not this one's.
        let session = saved.flatMap {
            $0.server == url.absoluteString
                ? TerminalChat.Session(token: $0.token, user: $0.user, refreshToken: $0.refreshToken, expiresAt: $0.expiresAt) : nil
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let server = url.absoluteString
        var configuration = TerminalChat.Configuration(
                serverURL: url, databaseDirectory: directory, trust: try options.trust(),
                credentialStorage: ProfileCredentials(directory: directory),
                onSignedIn: { session in
                    try? Profile(
                        server: server, token: session.token, user: session.user, refreshToken: session.refreshToken,
                        expiresAt: session.expiresAt
                    ).save(to: directory)
                },
                onSignedOut: {
                    try? FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent("session.json"))
                })
        configuration.bell = bell
        let app = TerminalChat(configuration: configuration, session: session)
        let status = await app.run()
        if status != 0 { throw ExitCode(status) }
    }
}
