import Foundation
import ParleyProtocol

/// Group fan-out: G groups of S members, one WebSocket each, senders sending into their
/// group; against Parley and against the bare broadcast floor, with the same generator.
public struct FanoutOptions: Sendable {
    /// How many groups (a conversation each for Parley, a broadcast group for the floor).
    public var groups = 5
    /// Members per group, one WebSocket each.
    public var size = 20
    /// Total messages/s; 0 = as fast as the server keeps up.
    public var rate: Double = 0
    /// Seconds measured, after the warmup.
    public var duration: Double = 10
    /// Seconds of sending before the measurement starts.
    public var warmup: Double = 2
    /// Sends a sender may have without an ack.
    public var inFlight = 2
    /// Members of each group that send (the first ones); nil = all.
    public var sendersPerGroup: Int?
    /// Event loop threads of the load generator.
    public var threads = 1
    /// With `servers` of more than one node: senders on the first node, receivers on the others.
    public var cross = false
    /// Log what each receiver got, for the exactly-once check (tests; costs memory).
    public var verify = false
    /// Per sender, when set: stop after this many (tests).
    public var messagesPerSender: Int?
    /// What each message is: plain, a reply in its group's one thread, or
    /// mentioning three other members.
    public var variant: FanoutVariant = .plain

    /// The defaults: 5 groups of 20, every member sending as fast as the server keeps up.
    public init() {}

    /// WebSockets in all: `groups × size`.
    public var connections: Int { groups * size }
    var senders: Int { Swift.min(size, sendersPerGroup ?? size) }

    var policy: SendPolicy {
        var policy = SendPolicy()
        policy.rate = rate
        policy.inFlight = inFlight
        policy.verify = verify
        policy.messagesPerSender = messagesPerSender
        return policy
    }
}

/// What the messages of a fan-out run are.
public enum FanoutVariant: String, Sendable, CaseIterable {
    /// Plain text messages.
    case plain
    /// Replies in one thread per group (each also moves its root's count: a second event).
    case thread
    /// Messages mentioning three other members of the group.
    case mention
}

/// Runs the group fan-out: against Parley servers, or against the bare broadcast floor.
public enum FanoutScenario {
    /// Against Parley servers (one URL, or several nodes on one database): users, groups and
    /// tokens are set up through the first.
    ///
    /// `prepare` runs after the groups exist and before any socket connects (seeding a history).
    public static func runParley(
        servers: [URL], options: FanoutOptions, prepare: (@Sendable ([BenchMember]) async throws -> Void)? = nil
    ) async throws -> RunResult {
        guard let first = servers.first else { throw BenchError("no server") }
        let endpoints = try servers.map { try BenchEndpoint(parley: $0) }
        debug("setting up \(options.groups) groups of \(options.size)")
        let members = try await ParleySetup.groups(baseURL: first, groups: options.groups, size: options.size)
        try await prepare?(members)
        let extra = try await ParleySetup.variantData(options.variant, baseURL: first, members: members, size: options.size)
        let cross = options.cross && endpoints.count > 1
        var specs = LoadRun.specs(
            members: members.map { ($0.group, $0.conversationId.description, $0.token) }, size: options.size,
            sendersPerGroup: options.senders
        ) { index, isSender in
            if cross { return isSender ? endpoints[0] : endpoints[1 + index % (endpoints.count - 1)] }
            return endpoints[index % endpoints.count]
        }
        for index in specs.indices { specs[index].extraData = extra[specs[index].group] ?? "" }
        return try await LoadRun.run(
            specs: specs, policy: options.policy, threads: options.threads, warmup: options.warmup, duration: options.duration)
    }

    /// Against the bare broadcast server started in this process.
    public static func runFloor(options: FanoutOptions) async throws -> RunResult {
        let server = try await BareServer.start()
        do {
            let endpoint = BenchEndpoint(host: "127.0.0.1", port: server.port, path: "/ws")
            let members = (0..<options.connections).map { index in
                (group: index / options.size, conversationId: "g\(index / options.size)", token: String?.none)
            }
            let specs = LoadRun.specs(members: members, size: options.size, sendersPerGroup: options.senders) { _, _ in endpoint }
            let result = try await LoadRun.run(
                specs: specs, policy: options.policy, threads: options.threads, warmup: options.warmup, duration: options.duration)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }
}
