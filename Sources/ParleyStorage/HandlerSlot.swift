import Synchronization

/// A callback registered once and called from any thread, such as the group commit's observer
/// of each batch.
///
/// Why not a `Mutex<(closure)?>`: reading a function value out of `Mutex.withLock` passes it
/// through an `inout` of the generic `Value`, and Swift writes it back wrapped in two more
/// reabstraction thunks each time. After N reads a call runs through 2N thunks: each call got
/// slower as the server ran, and a long run would overflow the stack (seen in a profile of
/// `bench fanout`: 29 % of the process in those thunks, stacks 127 frames deep and more).
/// Here the function lives in a struct, whose layout is the same in generic and concrete
/// code, so nothing is wrapped on the way in or out.
package final class HandlerSlot<Function: Sendable>: Sendable {
    private struct Stored: Sendable {
        let function: Function
    }

    private let slot = Mutex<Stored?>(nil)

    /// An empty slot.
    package init() {}

    /// Replaces the registered function.
    package func set(_ function: Function) {
        slot.withLock { $0 = Stored(function: function) }
    }

    /// The registered function, or nil.
    package var function: Function? {
        slot.withLock { $0?.function }
    }
}
