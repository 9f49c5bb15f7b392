import ParleyTestSupport
import Testing

extension Trait where Self == ConditionTrait {
    /// Runs only where `tool` is installed (or every tool is required: CI); otherwise the test
    /// is skipped with a line saying what to install.
    static func needs(_ tool: String, package: String? = nil) -> Self {
        .enabled(
            if: TestTools.mayRun(tool),
            "needs \(tool): apt-get install \(package ?? tool), or run scripts/test.sh, which installs what the tests use")
    }

    /// Runs only with a PostgreSQL server to create databases on (`PARLEY_TEST_POSTGRES_URL`,
    /// which scripts/test.sh starts and sets), or where every tool is required (CI).
    static var needsPostgres: Self {
        .enabled(
            if: TestTools.mayUsePostgres,
            "needs PostgreSQL: set PARLEY_TEST_POSTGRES_URL, or run scripts/test.sh, which starts one")
    }
}
