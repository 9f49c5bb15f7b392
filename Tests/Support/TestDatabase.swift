import Foundation
import Logging
import ParleyServer
import PostgresNIO
import ParleySQLite
import ParleyPostgres

/// The stores a test can run on: SQLite always, PostgreSQL when `PARLEY_TEST_POSTGRES_URL` is set.
public enum StoreKind: String, Sendable, CustomStringConvertible, CaseIterable {
    /// `SQLiteStore` on a file in a temporary folder.
    case sqlite
    /// `PostgresStore` on a fresh database of the `PARLEY_TEST_POSTGRES_URL` server.
    case postgres

    /// The kinds this run covers: `[.sqlite]`, plus `.postgres` when `PARLEY_TEST_POSTGRES_URL` is set.
    public static var available: [StoreKind] {
        TestDatabase.serverURL == nil && !TestTools.required ? [.sqlite] : [.sqlite, .postgres]
    }

    public var description: String { rawValue }
}

/// A throwaway PostgreSQL database for one test, created on the server `PARLEY_TEST_POSTGRES_URL`
/// names (whose user may `CREATE DATABASE`) and dropped by ``drop()``.
public struct TestDatabase: Sendable {
    /// The server URL from the environment, or nil when PostgreSQL tests are off.
    public static var serverURL: String? {
        ProcessInfo.processInfo.environment["PARLEY_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The database's name, `parley_t_<random>`.
    public let name: String
    /// The URL of the new database (the server URL with its path replaced).
    public let url: String

    /// Creates a fresh, empty database.
    public static func create() async throws -> TestDatabase {
        guard let serverURL, var components = URLComponents(string: serverURL) else {
            throw TestDatabaseError("PARLEY_TEST_POSTGRES_URL is not set")
        }
        let name = "parley_t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try await admin { client in
            // The name is ours (hex), not input: identifiers cannot be bound as parameters.
            // Read to the end: the statement has finished before the client stops.
            _ = try await client.query("CREATE DATABASE \(unescaped: name)").collect()
        }
        components.path = "/" + name
        return TestDatabase(name: name, url: components.string!)
    }

    /// Drops the database, closing any connection still open to it.
    public func drop() async {
        do {
            try await Self.admin { client in
                _ = try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)").collect()
            }
        } catch {
            print("Could not drop test database \(name): \(error)")
        }
    }

    /// Runs statements on this database, one after another (setting up a fault to inject).
    public func execute(_ statements: [String]) async throws {
        try await Self.admin(url: url) { client in
            for sql in statements { _ = try await client.query(PostgresQuery(unsafeSQL: sql)).collect() }
        }
    }

    /// Runs `body` with a short-lived client on the server URL's own database.
    public static func admin<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        guard let serverURL else { throw TestDatabaseError("PARLEY_TEST_POSTGRES_URL is not set") }
        return try await admin(url: serverURL, body)
    }

    /// Runs `body` with a short-lived client on the database `url` names.
    static func admin<T: Sendable>(url serverURL: String, _ body: (PostgresClient) async throws -> T) async throws -> T {
        var logger = Logger(label: "parley.test.postgres")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: try PostgresStore.configuration(url: serverURL), backgroundLogger: logger)
        let runner = Task { await client.run() }
        defer { runner.cancel() }
        return try await body(client)
    }
}

/// Why a test database could not be made.
public struct TestDatabaseError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
