import ArgumentParser
import Foundation
import Logging
import ParleyServer

/// `parley keys`: the token signing keys every node of a service shares through its store.
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, rotate and retire the keys that sign access tokens (shared by every node on one store).",
        discussion: """
            Rotation without signing anyone out: `parley keys rotate` adds a key; within a minute every \
            node signs new tokens with it, while tokens signed with the older keys stay valid. Once the \
            older tokens have expired (30 days), or at once to sign everyone out who holds one, \
            `parley keys retire KID` retires an old key: within a minute no node accepts its tokens. \
            Not used when PARLEY_JWT_SECRET is set (that secret is then the only key).
            """,
        subcommands: [List.self, Rotate.self, Retire.self])

    /// Where the store is: the same options and environment as `parley serve`.
    struct StoreOptions: ParsableArguments {
        @Option(name: .customLong("data-dir"), help: "Data directory of a SQLite server (env PARLEY_DATA_DIR; default ./parley-data).")
        var dataDirectory: String?
        @Option(name: .customLong("database"), help: "PostgreSQL URL of the service (env PARLEY_DATABASE_URL).")
        var databaseURL: String?

        func open() async throws -> any ParleyStore {
            let configuration = try storageConfiguration(dataDirectory: dataDirectory, databaseURL: databaseURL)
            if configuration.databaseURL == nil, !FileManager.default.fileExists(atPath: configuration.databasePath) {
                throw fail("no database at \(configuration.databasePath); give --data-dir or --database")
            }
            var logger = Logger(label: "parley.keys")
            logger.logLevel = .error
            do {
                return try await configuration.makeStore(logger: logger)
            } catch {
                throw fail("cannot open the store: \(error)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print every key: kid, created, retired (the newest live key signs).")
        @OptionGroup var store: StoreOptions

        func run() async throws {
            let store = try await store.open()
            let keys = try await store.signingKeys()
            try await store.close()
            let newestLive = keys.filter(\.isLive).max { ($0.createdAt, $0.kid) < ($1.createdAt, $1.kid) }?.kid
            let format = ISO8601DateFormatter()
            for key in keys {
                let state = key.retiredAt.map { "retired " + format.string(from: $0) } ?? (key.kid == newestLive ? "signing" : "verifying")
                print("\(key.kid)\tcreated \(format.string(from: key.createdAt))\t\(state)")
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a new key; nodes sign with it within a minute. Prints its kid.")
        @OptionGroup var store: StoreOptions

        func run() async throws {
            let store = try await store.open()
            let key = SigningKey.generate(now: Date())
            try await store.addSigningKey(key)
            try await store.close()
            print(key.kid)
        }
    }

    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Retire a key: its tokens stop working on every node within a minute.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The kid to retire (see `parley keys list`).") var kid: String

        func run() async throws {
            let store = try await store.open()
            let live = try await store.signingKeys().filter(\.isLive)
            let refusal: String? =
                !live.contains(where: { $0.kid == kid }) ? "no live key \(kid)"
                : live.count == 1 ? "\(kid) is the only live key: rotate first (`parley keys rotate`)" : nil
            if refusal == nil { _ = try await store.retireSigningKey(kid: kid, at: Date()) }
            try await store.close()
            if let refusal { throw fail(refusal) }
            print("retired \(kid)")
        }
    }
}
