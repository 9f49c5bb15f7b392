#if canImport(SwiftUI)
#if canImport(Network)
import Foundation
import Network
import ParleyClient

extension NetworkPath {
    /// The path an `NWPathMonitor` reports.
    public init(_ path: NWPath) {
        var interfaces: Set<Interface> = []
        if path.usesInterfaceType(.wifi) { interfaces.insert(.wifi) }
        if path.usesInterfaceType(.cellular) { interfaces.insert(.cellular) }
        if path.usesInterfaceType(.wiredEthernet) { interfaces.insert(.wired) }
        if path.usesInterfaceType(.other) { interfaces.insert(.other) }
        self.init(isAvailable: path.status == .satisfied, interfaces: interfaces)
    }
}

/// Follows the device's network path with `NWPathMonitor` and reports the changes the SDK
/// acts on (``NetworkPath/change(from:)``), on the main actor.
///
/// `ParleyChat` runs one while its session exists. An app with its own screens runs it in a
/// task that lives as long as its session (SwiftUI cancels a `.task` when its view goes):
///
/// ```swift
/// .task {
///     await NetworkPathObserver().follow { available, interfaceChanged in
///         await session.networkChanged(available: available, interfaceChanged: interfaceChanged)
///     }
/// }
/// ```
public struct NetworkPathObserver: Sendable {
    /// An observer; nothing is watched until ``follow(_:)``.
    public init() {}

    /// Reports the first path, then each change that matters, until the calling task is
    /// cancelled; the monitor stops then.
    /// - Parameter report: Called with whether the network can be reached, and whether it now
    ///   goes through another kind of interface.
    @MainActor
    public func follow(_ report: @MainActor (_ available: Bool, _ interfaceChanged: Bool) async -> Void) async {
        let (paths, input) = AsyncStream.makeStream(of: NetworkPath.self, bufferingPolicy: .bufferingNewest(1))
        let monitor = Self.monitor(reportingTo: input)
        defer { monitor.cancel() }
        var last: NetworkPath?
        // An AsyncStream ends its iteration when the task is cancelled.
        for await path in paths {
            if let change = path.change(from: last) {
                await report(change.available, change.interfaceChanged)
            }
            last = path
        }
    }

    /// A started monitor that yields every path into `input`. `NWPathMonitor` delivers on a
    /// dispatch queue only: a serial one of its own, read through the stream; made outside
    /// any actor, so its handler is not taken for main-actor code.
    private static func monitor(reportingTo input: AsyncStream<NetworkPath>.Continuation) -> NWPathMonitor {
        let monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { path in input.yield(NetworkPath(path)) }
        monitor.start(queue: DispatchQueue(label: "parley.network-path"))
        return monitor
    }
}
#endif
#endif
