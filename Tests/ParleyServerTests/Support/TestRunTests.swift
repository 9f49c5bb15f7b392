import Foundation
import ParleyTestSupport
import Testing

/// The test run itself: most tests start real servers, so the run caps how many go at once.
@Suite struct TestRunTests {
    /// The cap is set before Swift Testing starts (a C constructor), or chosen by the caller;
    /// without it every test starts at once and a 2-core machine fails timing waits.
    @Test func theRunLimitsHowManyTestsRunAtOnce() {
        let chosen = ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"]
        #expect(chosen != nil, "the constructor in Tests/Parallelism did not run")
        #expect(TestServer.parallelizationWidth == Int(chosen ?? "") ?? -1)
        #expect(TestServer.parallelizationWidth > 0)
    }
}
