import Foundation
import Logging
import NIOCore
import NIOWebSocket
import ParleyProtocol
import Synchronization
import ParleyRules

/// Where events go beyond this node (the PostgreSQL cluster link), and who is online there.
public protocol FanOutRelay: Sendable {
    /// Whether the user has a live connection on another node.
    func isOnlineElsewhere(_ userId: EntityID) -> Bool
    /// Carries an encoded event to the other nodes' connections of these users.
    func forward(_ frame: ByteBuffer, to userIds: [EntityID])
    /// Carries an event of a conversation's sequence (number `seq`) to the other nodes, which
    /// hand it to their connections in seq order.
    func forward(_ frame: ByteBuffer, to userIds: [EntityID], conversation conversationId: EntityID, seq: Int64)
    /// Carries an encoded event to the other nodes' connections of an organization.
    func forward(_ frame: ByteBuffer, toOrganization organizationId: EntityID, excluding excluded: Set<EntityID>)
    /// The user's first connection on this node opened; returns whether they were already
    /// online on another node (then nobody needs to be told).
    func userCameOnline(_ identity: Identity) async -> Bool
    /// The user's last connection on this node closed; returns whether they are still online
    /// on another node.
    func userWentOffline(_ identity: Identity) async -> Bool
    /// A user was deactivated here: every other node refuses their token and closes their
    /// connections.
    func userDeactivated(_ userId: EntityID, organizationId: EntityID)
    /// A block started or ended here: every other node reads the two users' blocks again.
    func blocksChanged(blocker: EntityID, blocked: EntityID)
}

/// The live connections of this node, by user, and the delivery of events to them.
///
/// An event is encoded once into one `ByteBuffer`; every recipient connection gets the same
/// bytes (ByteBuffer shares its storage). Delivery never waits on a connection: each has a
/// bounded queue, written out on its channel's event loop (``LiveConnection``).
public final class FanOut: Sendable {
    /// The live connections by user; its own object so the orderer can deliver to it without
    /// holding the fan-out itself.
    private final class Table: Sendable {
        struct State {
            var nextId = 0
            var byUser: [EntityID: [Int: LiveConnection]] = [:]
        }

        let state = Mutex(State())

        /// Queues a frame on every connection of these users (never waits on a connection).
        func deliver(_ frame: ByteBuffer, to userIds: some Sequence<EntityID>) {
            let targets = state.withLock { state in
                userIds.flatMap { state.byUser[$0].map { Array($0.values) } ?? [] }
            }
            for connection in targets { connection.enqueue(frame) }
        }
    }

    private let table = Table()
    private let relayBox = Mutex<(any FanOutRelay)?>(nil)
    private let logger: Logger
    /// Puts each conversation's events in seq order before they reach the connections.
    public let order: ConversationOrder

    /// An empty registry; `clock` runs the ordering's hold timers.
    public init(logger: Logger, clock: ServerClock = .system, holdBound: Duration = .milliseconds(200)) {
        self.logger = logger
        let table = self.table
        order = ConversationOrder(holdBound: holdBound, clock: clock) { event in
            table.deliver(event.frame, to: event.recipients)
            for variant in event.variants { table.deliver(variant.frame, to: variant.recipients) }
        }
    }

    /// Adds a connection whose first frame is `hello`; returns it and whether it is the user's
    /// first on this node.
    ///
    /// The connection is created with `hello` already queued before any delivery can find it,
    /// so no event (another user's presence, a message) can reach the socket ahead of it.
    func register(
        _ identity: Identity, grant: TokenGrant? = nil, channel: any Channel, hello: ByteBuffer
    ) -> (connection: LiveConnection, isFirst: Bool) {
        table.state.withLock { state in
            state.nextId += 1
            let connection = LiveConnection(
                id: state.nextId, identity: identity, grant: grant, channel: channel, first: hello)
            let isFirst = state.byUser[identity.userId]?.isEmpty ?? true
            state.byUser[identity.userId, default: [:]][connection.id] = connection
            return (connection, isFirst)
        }
    }

    /// Removes a connection; returns whether it was the user's last on this node.
    func unregister(_ connection: LiveConnection) -> Bool {
        table.state.withLock { state in
            let userId = connection.identity.userId
            state.byUser[userId]?[connection.id] = nil
            if state.byUser[userId]?.isEmpty ?? true {
                state.byUser[userId] = nil
                return true
            }
            return false
        }
    }

    /// Connects this node to the others: every delivery is also offered to the relay.
    public func attach(relay: any FanOutRelay) {
        relayBox.withLock { $0 = relay }
    }

    /// The cluster link, if this node is part of one.
    public var relay: (any FanOutRelay)? { relayBox.withLock { $0 } }

    /// Whether the user has a live connection on this node or, in a cluster, on any node.
    public func isOnline(_ userId: EntityID) -> Bool {
        isOnlineHere(userId) || (relay?.isOnlineElsewhere(userId) ?? false)
    }

    /// Whether the user has a live connection on this node.
    public func isOnlineHere(_ userId: EntityID) -> Bool {
        table.state.withLock { $0.byUser[userId] != nil }
    }

    /// How many connections are live on this node.
    public var connectionCount: Int {
        table.state.withLock { $0.byUser.values.reduce(0) { $0 + $1.count } }
    }

    /// Each live connection's queued frames (for the metrics' gauges).
    /// WebSocket sends taken from their connections and waiting for their commit, on this node
    /// (at most ``Gateway/maxPipelinedSends`` a connection; a reader waits beyond).
    public var sendsAwaitingCommit: Int { awaitingCommit.load(ordering: .relaxed) }
    let awaitingCommit = Atomic<Int>(0)

    /// Heartbeat pings sent, and connections the heartbeat closed as silent, on this node.
    public var heartbeats: (pings: Int, closed: Int) {
        (heartbeatPings.load(ordering: .relaxed), heartbeatCloses.load(ordering: .relaxed))
    }
    let heartbeatPings = Atomic<Int>(0)
    let heartbeatCloses = Atomic<Int>(0)

    /// How many frames wait in each open connection's outgoing queue (for the metrics and tests).
    public var queueDepths: [Int] {
        table.state.withLock { $0.byUser.values.flatMap { $0.values } }.map(\.queueDepth)
    }

    /// Encodes an event once and queues it on every connection of the given users.
    public func deliver(_ event: ServerEvent, to userIds: some Sequence<EntityID>) {
        guard let frame = encode(event) else { return }
        deliver(frame, to: userIds)
    }

    /// An event encoded once, for every recipient; nil (logged) if it cannot be encoded.
    private func encode(_ event: ServerEvent) -> ByteBuffer? {
        // A message's events and conversation views, the bulk of the traffic, are written by
        // hand (see FastWire).
        if let bytes = FastWire.event(event) { return ByteBuffer(bytes: bytes) }
        do {
            return ByteBuffer(bytes: try WireCoding.makeEncoder().encode(event))
        } catch {
            logger.error("Could not encode event", metadata: ["type": "\(event.type)", "error": "\(error)"])
            return nil
        }
    }

    /// Queues an event of a conversation's sequence (a message created, or changed with the
    /// number `seq`) on every connection of the given users, here and on other nodes, after
    /// every earlier event of that conversation: connections see a conversation's events in
    /// seq order.
    public func deliver(_ event: ServerEvent, inSequenceOf conversationId: EntityID, seq: Int64, to userIds: [EntityID]) {
        guard let frame = encode(event) else { return }
        relay?.forward(frame, to: userIds, conversation: conversationId, seq: seq)
        order.publish(conversationId, .init(seq: seq, frame: frame, recipients: userIds))
    }

    /// Queues an event of a conversation's sequence as ``deliver(_:inSequenceOf:seq:to:)`` does,
    /// with `variant` instead of `event` for the recipients among `variantUsers` (a
    /// blocked sender's message, marked for those who block them). Here both go in seq order;
    /// to other nodes the variant goes as a plain frame (a client that sees it ahead of an
    /// earlier seq catches the gap up from the store).
    public func deliver(
        _ event: ServerEvent, inSequenceOf conversationId: EntityID, seq: Int64, to userIds: [EntityID],
        variant: ServerEvent, for variantUsers: Set<EntityID>
    ) {
        let apart = userIds.filter(variantUsers.contains)
        guard !apart.isEmpty else { return deliver(event, inSequenceOf: conversationId, seq: seq, to: userIds) }
        guard let frame = encode(event), let other = encode(variant) else { return }
        let main = userIds.filter { !variantUsers.contains($0) }
        relay?.forward(frame, to: main, conversation: conversationId, seq: seq)
        relay?.forward(other, to: apart)
        order.publish(conversationId, .init(seq: seq, frame: frame, recipients: main, variants: [.init(frame: other, recipients: apart)]))
    }

    /// Queues an encoded frame on every connection of the given users, here and on other nodes.
    public func deliver(_ frame: ByteBuffer, to userIds: some Sequence<EntityID>) {
        let users = Array(userIds)
        deliverHere(frame, to: users)
        relay?.forward(frame, to: users)
    }

    /// Queues an encoded frame on this node's connections of the given users only.
    public func deliverHere(_ frame: ByteBuffer, to userIds: some Sequence<EntityID>) {
        table.deliver(frame, to: userIds)
    }

    /// Queues an event on every connection of an organization's users, except `excluded` users.
    public func deliver(_ event: ServerEvent, toOrganization organizationId: EntityID, excluding excluded: Set<EntityID> = []) {
        guard let frame = try? ByteBuffer(bytes: WireCoding.makeEncoder().encode(event)) else { return }
        deliverHere(frame, toOrganization: organizationId, excluding: excluded)
        relay?.forward(frame, toOrganization: organizationId, excluding: excluded)
    }

    /// Queues an encoded frame on this node's connections of an organization's users.
    public func deliverHere(_ frame: ByteBuffer, toOrganization organizationId: EntityID, excluding excluded: Set<EntityID>) {
        let users = table.state.withLock { state in
            state.byUser.compactMap { userId, connections in
                excluded.contains(userId) || connections.first?.value.identity.organizationId != organizationId ? nil : userId
            }
        }
        deliverHere(frame, to: users)
    }

    /// The users connected to this node, with their organization.
    func localUsers() -> [(userId: EntityID, organizationId: EntityID)] {
        table.state.withLock { state in
            state.byUser.compactMap { userId, connections in
                connections.first.map { (userId, $0.value.identity.organizationId) }
            }
        }
    }

    /// Closes every connection of one user on this node (a deactivated account: 4001).
    public func closeConnections(of userId: EntityID, code: Int, reason: String) {
        let connections = table.state.withLock { $0.byUser[userId].map { Array($0.values) } ?? [] }
        for connection in connections { connection.close(WebSocketErrorCode(codeNumber: code), reason: reason) }
    }

    /// Closes each connection whose session `end` says is over (with its reason), and returns
    /// how many it closed. Called by the session sweep.
    @discardableResult
    func closeEndedSessions(code: Int, _ end: (TokenGrant) -> String?) -> Int {
        let all = table.state.withLock { $0.byUser.values.flatMap(\.values) }
        var closed = 0
        for connection in all where !connection.isClosing {
            guard let grant = connection.grant, let reason = end(grant) else { continue }
            connection.close(WebSocketErrorCode(codeNumber: code), reason: reason)
            closed += 1
        }
        return closed
    }

    /// WebSocket sessions opened and not yet wholly ended (their user's offline announcement
    /// included): the shutdown waits for none to be left.
    let openSessions = Atomic<Int>(0)

    /// Closes every connection (server shutdown: "going away", so clients reconnect elsewhere).
    public func closeAll(_ code: WebSocketErrorCode = .goingAway, reason: String = "server shutting down") {
        let all = table.state.withLock { $0.byUser.values.flatMap(\.values) }
        for connection in all { connection.close(code, reason: reason) }
    }
}
