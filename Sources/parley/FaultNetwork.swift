import Foundation

/// The hosts of a fault run, made on this machine for the run and removed after it: each node
/// in a network namespace of its own with two links, one to the clients' bridge and one to the
/// database's, so a link can be cut without the other.
///
/// ```
///   clients (this namespace) ── bridge <tag>-f 198.18.1.1 ── <tag>-n<i> eth0 198.18.1.(10+i)
///   PostgreSQL (this namespace) ── bridge <tag>-b 198.18.2.1 ── <tag>-n<i> eth1 198.18.2.(10+i)
/// ```
///
/// 198.18.0.0/15 is the range set aside for benchmark networks (RFC 2544): no traffic of the run
/// leaves this machine. A cut is a blackhole route on both ends (packets silently dropped, as
/// in a real partition, connections left open to time out); a dropped link is the node's end
/// of a veth taken down.
struct FaultNetwork {
    /// Names every namespace, bridge and veth of the run (at most 15 characters with a suffix).
    let tag: String
    let nodes: Int
    static let frontPrefix = "198.18.1", backPrefix = "198.18.2"
    /// Where PostgreSQL listens (the database bridge's address, in this namespace).
    static let databaseAddress = "\(backPrefix).1"

    init(nodes: Int, tag: String = "pf\(String(getpid(), radix: 16))") {
        self.nodes = nodes
        self.tag = tag
    }

    func namespace(_ node: Int) -> String { "\(tag)-n\(node)" }
    /// The node's address on the clients' side.
    func frontAddress(_ node: Int) -> String { "\(Self.frontPrefix).\(10 + node)" }
    /// The node's address on the database's side.
    func backAddress(_ node: Int) -> String { "\(Self.backPrefix).\(10 + node)" }

    /// Whether this machine lets the run make namespaces (root, iproute2, a kernel with netns).
    static func available() -> String? {
        guard getuid() == 0 else { return "needs root (network namespaces)" }
        let probe = "pfprobe\(getpid() % 1000)"
        guard (try? Self.ip(["netns", "add", probe])) != nil else { return "`ip netns add` failed: no iproute2 or no namespaces here" }
        _ = try? Self.ip(["netns", "del", probe])
        return nil
    }

    /// Makes the bridges, the namespaces and their links.
    func create() throws {
        for (bridge, address) in [("\(tag)-f", "\(Self.frontPrefix).1/24"), ("\(tag)-b", "\(Self.databaseAddress)/24")] {
            try Self.ip(["link", "add", bridge, "type", "bridge"])
            try Self.ip(["addr", "add", address, "dev", bridge])
            try Self.ip(["link", "set", bridge, "up"])
        }
        for node in 0..<nodes {
            let ns = namespace(node)
            try Self.ip(["netns", "add", ns])
            try Self.ip(["netns", "exec", ns, "ip", "link", "set", "lo", "up"])
            for (side, bridge, inside, address) in [
                ("f", "\(tag)-f", "eth0", frontAddress(node)), ("b", "\(tag)-b", "eth1", backAddress(node)),
            ] {
                let outer = "\(tag)-\(side)\(node)", peer = "\(tag)-\(side)\(node)p"
                try Self.ip(["link", "add", outer, "type", "veth", "peer", "name", peer])
                try Self.ip(["link", "set", outer, "master", bridge, "up"])
                try Self.ip(["link", "set", peer, "netns", ns])
                try Self.ip(["netns", "exec", ns, "ip", "link", "set", peer, "name", inside])
                try Self.ip(["netns", "exec", ns, "ip", "addr", "add", "\(address)/24", "dev", inside])
                try Self.ip(["netns", "exec", ns, "ip", "link", "set", inside, "up"])
            }
        }
    }

    /// Removes everything the run made (what is already gone is skipped).
    func remove() {
        for node in 0..<nodes { _ = try? Self.ip(["netns", "del", namespace(node)]) }
        for bridge in ["\(tag)-f", "\(tag)-b"] { _ = try? Self.ip(["link", "del", bridge]) }
    }

    /// Removes what earlier runs left behind (a run killed before it cleaned up): namespaces
    /// named like a run's whose process is gone.
    static func removeLeftovers() {
        guard let list = try? ip(["netns", "list"]) else { return }
        for line in list.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            guard name.hasPrefix("pf"), let dash = name.firstIndex(of: "-"),
                  let pid = Int32(name[name.index(name.startIndex, offsetBy: 2)..<dash], radix: 16) else { continue }
            // The tag holds the run's pid: a live process with that pid keeps its run.
            if kill(pid, 0) == 0 { continue }
            let tag = String(name[..<dash])
            _ = try? ip(["netns", "del", name])
            _ = try? ip(["link", "del", "\(tag)-f"])
            _ = try? ip(["link", "del", "\(tag)-b"])
        }
    }

    /// The arguments that run a program inside a node's namespace.
    func inside(_ node: Int, _ arguments: [String]) -> [String] { ["netns", "exec", namespace(node)] + arguments }

    /// Cuts (or heals) the node's link to the database, both ways; clients still reach it.
    func database(of node: Int, cut: Bool) throws {
        let verb = cut ? "add" : "del"
        try Self.ip(inside(node, ["ip", "route", verb, "blackhole", "\(Self.databaseAddress)/32"]))
        try Self.ip(["route", verb, "blackhole", "\(backAddress(node))/32"])
    }

    /// Cuts (or heals) two nodes' links to each other, both ways, on both sides.
    func peers(_ a: Int, _ b: Int, cut: Bool) throws {
        let verb = cut ? "add" : "del"
        for (from, to) in [(a, b), (b, a)] {
            try Self.ip(inside(from, ["ip", "route", verb, "blackhole", "\(backAddress(to))/32"]))
            try Self.ip(inside(from, ["ip", "route", verb, "blackhole", "\(frontAddress(to))/32"]))
        }
    }

    /// Takes the node's link to the clients down (their connections drop mid-send) or up.
    func clients(of node: Int, up: Bool) throws {
        try Self.ip(["link", "set", "\(tag)-f\(node)", up ? "up" : "down"])
    }

    /// Whether iptables is here for the lossy link; nil when it is, else why not.
    static func lossyLinkUnavailable() -> String? {
        iptablesPath == nil ? "no `iptables` (apt-get install iptables)" : nil
    }

    static let iptablesPath = ["/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Makes the node's outgoing packets on both its links late and lossy, as `netem delay
    /// 200ms loss 5%` on its interfaces would (this kernel has no netem): an iptables rule drops
    /// `lossPercent` of them at random (`statistic`), and the next queues the rest (`NFQUEUE`;
    /// nftables' own `queue` is not in this kernel) to a `parley bench link-delay` inside the
    /// namespace, which holds each for `delayMs`. Returns that process; ``heal(_:delayer:)``
    /// ends both.
    func degrade(_ node: Int, binary: String, delayMs: Int, lossPercent: Int) throws -> Process {
        guard let iptables = Self.iptablesPath else { throw CommandFailed(description: Self.lossyLinkUnavailable() ?? "no iptables") }
        let delayer = Process()
        delayer.executableURL = URL(fileURLWithPath: Self.ipPath)
        delayer.arguments = inside(node, [binary, "bench", "link-delay", "--delay-ms", "\(delayMs)"])
        delayer.standardOutput = FileHandle.nullDevice
        try delayer.run()
        do {
            try Self.ip(inside(node, [iptables, "-A", "OUTPUT", "-o", "eth+", "-m", "statistic", "--mode", "random",
                                      "--probability", String(format: "%.2f", Double(lossPercent) / 100), "-j", "DROP"]))
            // `--queue-bypass`: a packet passes undelayed while nothing listens (the delayer's first moments).
            try Self.ip(inside(node, [iptables, "-A", "OUTPUT", "-o", "eth+", "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"]))
        } catch {
            _ = try? Self.ip(inside(node, [iptables, "-F", "OUTPUT"]))
            delayer.terminate()
            throw error
        }
        return delayer
    }

    /// Ends a lossy link: no packet is queued or dropped any more, and the delayer lets what it
    /// holds go before it exits.
    func heal(_ node: Int, delayer: Process) throws {
        if let iptables = Self.iptablesPath { try Self.ip(inside(node, [iptables, "-F", "OUTPUT"])) }
        delayer.terminate()
        delayer.waitUntilExit()
    }

    /// Runs `ip` with the arguments; returns what it printed, throws on failure.
    @discardableResult
    static func ip(_ arguments: [String]) throws -> String {
        try run(ipPath, arguments)
    }

    static let ipPath = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/ip"

    /// Runs a program to its end; throws with its output when it fails. Spawned and reaped
    /// here, with its output in a file: a program that leaves a daemon behind (pg_ctl start)
    /// keeps inherited pipes open, and Foundation's `Process` may then never see it end.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-run-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw CommandFailed(description: "cannot start \(executable): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        // Exited normally with 0: WIFEXITED and WEXITSTATUS, spelled out (C macros).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw CommandFailed(description: "\(executable) \(arguments.joined(separator: " ")): \(output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return output
    }
}

/// A program of a fault run's setup failed: what ran, and what it said.
struct CommandFailed: Error, CustomStringConvertible {
    let description: String
}
