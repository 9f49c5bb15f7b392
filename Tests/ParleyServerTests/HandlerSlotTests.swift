@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import Testing

/// Callbacks registered once and read on every batch (the group commit's observer), every
/// hold that runs out (the orderer's store reader) and every lost node (the cluster's).
@Suite struct HandlerSlotTests {
    /// The address of a local of the caller's frame: the stack grows down, so a call that runs
    /// through more frames to get here gives a lower address.
    @inline(never) static func stackAddress() -> UInt {
        var local = 0
        return withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
    }

    /// Reading the function many times leaves a call as shallow as the first one. Held in a
    /// `Mutex` of the bare function, each read wrapped it in two more thunks, so after 20,000
    /// reads a call ran through 40,000 frames (megabytes of stack, and as many calls' time).
    @Test func readsNeitherWrapNorDeepenTheFunction() throws {
        let slot = HandlerSlot<@Sendable () -> UInt>()
        slot.set { Self.stackAddress() }
        let before = try #require(slot.function)
        let first = before()
        for _ in 0..<20_000 { _ = slot.function }
        let after = try #require(slot.function)
        let later = after()
        let deeper = first > later ? first - later : 0
        #expect(deeper < 4_096, "a call after 20,000 reads ran \(deeper) bytes deeper")
    }

    /// Set replaces; nothing set is nil.
    @Test func theLastSetFunctionIsTheOneCalled() throws {
        let slot = HandlerSlot<@Sendable (Int) -> Int>()
        #expect(slot.function == nil)
        slot.set { $0 + 1 }
        slot.set { $0 * 10 }
        let function = try #require(slot.function)
        #expect(function(4) == 40)
    }
}
