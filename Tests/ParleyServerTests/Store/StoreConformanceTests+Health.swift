import Foundation
import ParleyServer
import ParleyTestSupport
import Testing

extension StoreConformanceTests {
    /// The write behind `/ready` and the end of a storage-trouble spell succeeds on a healthy
    /// store, again and again (on PostgreSQL it once bound its filler as the wrong type and
    /// failed every time: `/ready` said 503 for good and no spell ever ended).
    @Test(arguments: StoreKind.available)
    func theWriteProbeSucceedsOnAHealthyStore(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            for _ in 0..<3 { try await store.probeWrite(now: t0) }
        }
    }
}
