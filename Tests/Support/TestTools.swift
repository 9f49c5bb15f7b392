import Foundation

/// The programs some tests drive besides Swift: tmux (the terminal client), Chromium (the web
/// client), nginx (the shipped reverse-proxy site) and a PostgreSQL server
/// (`PARLEY_TEST_POSTGRES_URL`). `scripts/test.sh` installs and starts them all; a bare
/// `swift test` skips the tests of each one that is missing, and says which and why.
///
/// Where nothing may be skipped (CI, or `PARLEY_TEST_REQUIRE_TOOLS=1`), ``required`` is true and
/// those tests run anyway, so a missing tool fails them instead of hiding them.
public enum TestTools {
    /// Whether every tool must be there: `CI=true` or `PARLEY_TEST_REQUIRE_TOOLS=1`.
    public static var required: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["CI"] == "true" || environment["PARLEY_TEST_REQUIRE_TOOLS"] == "1"
    }

    /// The first executable of that name on `PATH` or in the system folders, if any.
    public static func path(of name: String) -> String? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"]
        return folders.lazy.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether `name` can run here, or must be assumed to (``required``).
    public static func mayRun(_ name: String) -> Bool { required || path(of: name) != nil }

    /// Whether the PostgreSQL tests run: a server URL is set, or they must run (and then fail
    /// loudly without one).
    public static var mayUsePostgres: Bool { required || TestDatabase.serverURL != nil }
}
