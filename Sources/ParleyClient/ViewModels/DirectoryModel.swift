import Foundation
import Observation
import ParleyProtocol

/// The organization's people with their presence, for a "new chat" or contacts screen.
@MainActor @Observable
public final class DirectoryModel {
    /// By name; `isOnline` and `lastSeenAt` follow presence events.
    public private(set) var users: [User] = []
    private let client: ChatClient
    @ObservationIgnored private var observation: Task<Void, Never>?

    /// A model over the client's directory; empty until ``start()``.
    public init(client: ChatClient) { self.client = client }

    /// Shows the cached directory, refreshes it from the server, then follows presence.
    public func start() async {
        let changes = await client.changes()
        await reload()
        try? await client.refreshDirectory()
        observation = Task { [weak self] in
            for await change in changes where change == .directory {
                await self?.reload()
            }
        }
    }

    /// Stops following presence.
    public func stop() {
        observation?.cancel()
        observation = nil
    }

    func reload() async {
        if let cached = try? await client.database.users() { users = cached }
    }
}
