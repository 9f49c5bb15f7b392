import Foundation

/// The device's network as the SDK's connection cares about it: whether anything can be
/// reached, and through which kinds of interface.
public struct NetworkPath: Sendable, Equatable {
    /// A kind of interface a path goes through.
    public enum Interface: Sendable, Hashable {
        /// Wi-Fi.
        case wifi
        /// Cellular data.
        case cellular
        /// Ethernet.
        case wired
        /// Anything else (a tether, a virtual interface).
        case other
    }

    /// Whether connections can be made now (`NWPath.status == .satisfied`).
    public var isAvailable: Bool
    /// The kinds of interface connections use.
    public var interfaces: Set<Interface>

    /// A path with these properties (tests, previews).
    public init(isAvailable: Bool, interfaces: Set<Interface>) {
        self.isAvailable = isAvailable
        self.interfaces = interfaces
    }

    /// What to tell the SDK (``ChatSession/networkChanged(available:interfaceChanged:)``) when the
    /// path goes from `previous` (nil: the first report) to this one; nil when nothing it acts
    /// on changed (a monitor also reports changes of DNS, cost or constraints).
    /// An interface change counts only while connected before and after: Wi-Fi to cellular
    /// leaves the old socket dead, so the SDK reconnects at once instead of waiting for
    /// heartbeats to go unanswered.
    public func change(from previous: NetworkPath?) -> (available: Bool, interfaceChanged: Bool)? {
        guard let previous else { return (isAvailable, false) }
        if previous.isAvailable != isAvailable { return (isAvailable, false) }
        if isAvailable, previous.interfaces != interfaces { return (true, true) }
        return nil
    }
}
