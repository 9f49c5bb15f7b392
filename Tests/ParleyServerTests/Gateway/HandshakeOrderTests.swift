import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing
import WSClient

/// The contract's first rule of a WebSocket: its first frame is `hello`, whatever else is
/// happening in the organization at that moment.
@Suite struct HandshakeOrderTests {
    /// 120 users of one organization connect at once with a plain WebSocket client (not the
    /// SDK, which would accept `hello` late); every connection's first frame must be `hello`,
    /// although each arrival announces presence to everyone already connected.
    @Test(arguments: StoreKind.available)
    func helloIsTheFirstFrameOnEverySimultaneousConnection(_ kind: StoreKind) async throws {
        let server = try await TestServer.start(store: kind)
        defer { Task { await server.stop() } }
        let count = 120
        var users: [TestUser] = []
        for index in 0..<count { users.append(try await server.register("user\(index)@x.io")) }

        let firstFrames = FirstFrames()
        let everyoneHasOne: @Sendable () -> Bool = { firstFrames.all.count >= count }
        let url = server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://") + "/api/v1/ws"
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in users {
                group.addTask {
                    let configuration = WebSocketClientConfiguration(
                        maxFrameSize: 1 << 20, additionalHeaders: [.authorization: "Bearer \(user.token)"], autoPing: .disabled)
                    _ = try await WebSocketClient.connect(url: url, configuration: configuration, logger: .init(label: "probe")) {
                        inbound, outbound, _ in
                        var iterator = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                        if case .text(let text) = try await iterator.next() {
                            let type = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["type"] as? String
                            firstFrames.append(type ?? "?")
                        }
                        // Stay connected until everyone has a first frame, so arrivals overlap.
                        try? await waitFor("every connection's first frame", timeout: .seconds(30)) { everyoneHasOne() }
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                }
            }
            try await group.waitForAll()
        }
        let frames = firstFrames.all
        #expect(frames.count == count)
        let wrong = frames.filter { $0 != "hello" }
        #expect(wrong.isEmpty, "\(wrong.count) of \(count) connections began with \(Set(wrong)) instead of hello")
    }
}

/// The first frame type each connection saw.
private final class FirstFrames: Sendable {
    private let types = Mutex<[String]>([])
    func append(_ type: String) { types.withLock { $0.append(type) } }
    var all: [String] { types.withLock { $0 } }
}
