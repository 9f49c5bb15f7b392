import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc

/// `parley bench link-delay`: holds every packet the kernel queues to it (an iptables `NFQUEUE`
/// rule) for a fixed time, then lets it go, in arrival order. `bench partition` runs it inside a
/// node's namespace for its "200 ms delay, 5 % loss" fault: this kernel has no `netem`, and
/// this does what `netem delay` does on the node's outgoing packets (loss is an iptables
/// `statistic` rule before the queue).
///
/// It speaks nfnetlink_queue over a netlink socket itself (no libnetfilter_queue): bind the
/// queue, ask for metadata only, and answer with batch verdicts ("accept every packet up to
/// id N"), one per tick for the packets whose time has come. SIGINT or SIGTERM lets every held
/// packet go before it exits, so a healed link loses nothing to the healing.
struct LinkDelay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "link-delay", abstract: "Delay the packets of an nftables queue (a netem stand-in for `bench partition`).",
        shouldDisplay: false)

    @Option(help: "The queue's number (iptables `--queue-num`).") var queue: UInt16 = 0
    @Option(help: "How long each packet is held, in milliseconds.") var delayMs: Int = 200
    @Option(help: "Most packets held at once; more are dropped, as netem's limit does.") var limit: UInt32 = 100_000

    func run() throws {
        let stop = StopSignals()
        let socket = try NetfilterQueueSocket(queue: queue, limit: limit)
        defer { socket.close() }
        var held: [(id: UInt32, due: UInt64)] = []
        var head = 0
        let delay = UInt64(delayMs) * 1_000_000
        while !stop.received {
            let now = Self.now()
            let wait = head < held.count ? Int32(max(0, Int64(held[head].due) - Int64(now)) / 1_000_000) : 50
            for id in try socket.receive(waitingMilliseconds: min(wait, 50)) { held.append((id, Self.now() + delay)) }
            var last: UInt32?
            let now2 = Self.now()
            while head < held.count, held[head].due <= now2 {
                last = held[head].id
                head += 1
            }
            if let last { try socket.acceptAll(upTo: last) }
            if head > 4096 {
                held.removeFirst(head)
                head = 0
            }
        }
        if head < held.count, let last = held.last?.id { try socket.acceptAll(upTo: last) }
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// One nfnetlink_queue, bound over a raw netlink socket (the protocol of
/// `linux/netfilter/nfnetlink_queue.h`, written out: netlink is host-endian, nfnetlink's
/// attributes big-endian).
struct NetfilterQueueSocket {
    let descriptor: Int32
    let queue: UInt16
    private static let subsystem: UInt16 = 3 << 8  // NFNL_SUBSYS_QUEUE
    private static let packet: UInt16 = 0, verdictBatch: UInt16 = 3, config: UInt16 = 2
    private static let request: UInt16 = 1, acknowledge: UInt16 = 4  // NLM_F_REQUEST, NLM_F_ACK

    init(queue: UInt16, limit: UInt32) throws {
        self.queue = queue
        descriptor = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue), 12 /* NETLINK_NETFILTER */)
        guard descriptor >= 0 else { throw CommandFailed(description: "link-delay: no netlink socket: \(String(cString: strerror(errno)))") }
        // Room for bursts, and no ENOBUFS errors when the kernel outruns us (it drops instead).
        var size: Int32 = 16 << 20
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        var on: Int32 = 1
        setsockopt(descriptor, 270 /* SOL_NETLINK */, 5 /* NETLINK_NO_ENOBUFS */, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = [UInt8](repeating: 0, count: 12)  // sockaddr_nl: family, pad, pid 0 (the kernel picks), groups 0
        address[0] = UInt8(AF_NETLINK)
        let bound = address.withUnsafeBytes { Glibc.bind(descriptor, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), 12) }
        guard bound == 0 else { throw CommandFailed(description: "link-delay: bind: \(String(cString: strerror(errno)))") }
        // NFQNL_CFG_CMD_BIND (1) for the queue; metadata only (NFQNL_COPY_META, range 0); the limit.
        try configure([(1, [1, 0, 0, 0])])
        try configure([(2, Self.bigEndian(UInt32(0)) + [1]), (3, Self.bigEndian(limit))])
    }

    /// Sends a configuration message and waits for the kernel's acknowledgement.
    private func configure(_ attributes: [(UInt16, [UInt8])]) throws {
        try send(Self.message(type: Self.subsystem | Self.config, flags: Self.request | Self.acknowledge, queue: queue, attributes: attributes))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count >= 20 else { throw CommandFailed(description: "link-delay: no answer from the kernel") }
        let type = UInt16(buffer[4]) | UInt16(buffer[5]) << 8
        if type == 2 /* NLMSG_ERROR */ {
            let code = Int32(bitPattern: UInt32(buffer[16]) | UInt32(buffer[17]) << 8 | UInt32(buffer[18]) << 16 | UInt32(buffer[19]) << 24)
            guard code == 0 else { throw CommandFailed(description: "link-delay: the kernel refused the queue's configuration: \(String(cString: strerror(-code)))") }
        }
    }

    /// The ids of the packets queued to us, waiting up to `milliseconds` for the first.
    func receive(waitingMilliseconds milliseconds: Int32) throws -> [UInt32] {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return [] }
        var ids: [UInt32] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { break }
            var offset = 0
            while offset + 20 <= count {
                let length = Int(Self.hostUInt32(buffer, offset))
                guard length >= 16, offset + length <= count else { break }
                let type = UInt16(buffer[offset + 4]) | UInt16(buffer[offset + 5]) << 8
                if type == Self.subsystem | Self.packet {
                    // Attributes follow the netlink header (16) and nfgenmsg (4); NFQA_PACKET_HDR (1) leads with the id.
                    var attribute = offset + 20
                    while attribute + 4 <= offset + length {
                        let size = Int(UInt16(buffer[attribute]) | UInt16(buffer[attribute + 1]) << 8)
                        let kind = (UInt16(buffer[attribute + 2]) | UInt16(buffer[attribute + 3]) << 8) & 0x3fff
                        guard size >= 4 else { break }
                        if kind == 1, size >= 8 {
                            ids.append(UInt32(buffer[attribute + 4]) << 24 | UInt32(buffer[attribute + 5]) << 16
                                | UInt32(buffer[attribute + 6]) << 8 | UInt32(buffer[attribute + 7]))
                            break
                        }
                        attribute += (size + 3) & ~3
                    }
                }
                offset += (length + 3) & ~3
            }
        }
        return ids
    }

    /// Lets every queued packet up to and including `id` go on (NFQNL_MSG_VERDICT_BATCH, NF_ACCEPT).
    func acceptAll(upTo id: UInt32) throws {
        try send(Self.message(type: Self.subsystem | Self.verdictBatch, flags: Self.request, queue: queue,
                              attributes: [(2, Self.bigEndian(UInt32(1)) + Self.bigEndian(id))]))
    }

    func close() {
        _ = try? configure([(1, [2, 0, 0, 0])])  // NFQNL_CFG_CMD_UNBIND
        Glibc.close(descriptor)
    }

    private func send(_ message: [UInt8]) throws {
        let sent = message.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == message.count else { throw CommandFailed(description: "link-delay: send: \(String(cString: strerror(errno)))") }
    }

    /// A netlink message: header, nfgenmsg (AF_UNSPEC, version 0, the queue), attributes padded to 4.
    static func message(type: UInt16, flags: UInt16, queue: UInt16, attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var body: [UInt8] = [0, 0, UInt8(queue >> 8), UInt8(queue & 0xff)]
        for (kind, payload) in attributes {
            let size = UInt16(4 + payload.count)
            body += [UInt8(size & 0xff), UInt8(size >> 8), UInt8(kind & 0xff), UInt8(kind >> 8)] + payload
            while body.count % 4 != 0 { body.append(0) }
        }
        let length = UInt32(16 + body.count)
        let header = hostBytes(length) + [UInt8(type & 0xff), UInt8(type >> 8), UInt8(flags & 0xff), UInt8(flags >> 8)]
            + [UInt8](repeating: 0, count: 8)
        return header + body
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }
    static func hostBytes(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
    static func hostUInt32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
    }
}
#endif
