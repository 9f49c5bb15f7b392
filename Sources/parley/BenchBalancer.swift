import Foundation

/// HAProxy in front of a fault run's nodes, as an operator would put a load balancer: it reads
/// each node's `/ready` every half second, takes a node out after two failed checks and cuts
/// the sessions still open to it (`on-marked-down shutdown-sessions`), so the SDK clients
/// reconnect, through it, to a node that can write. Clients use ``url``; the nodes are on
/// `addresses` at `port`.
struct Balancer {
    let process: Process
    let port: Int
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Where HAProxy is, if it is installed.
    static var executable: String? {
        ["/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The configuration for nodes at `addresses`, listening on `listen` (loopback).
    static func configuration(listen: Int, addresses: [String], port: Int) -> String {
        let servers = addresses.enumerated().map { index, address in "    server node\(index) \(address):\(port) check" }
        return """
            global
                maxconn 4096
            defaults
                mode http
                timeout connect 2s
                timeout client 1h
                timeout server 1h
                timeout tunnel 1h
                timeout check 1s
                option redispatch
                retries 2
            frontend chat
                bind 127.0.0.1:\(listen)
                default_backend nodes
            backend nodes
                balance roundrobin
                option httpchk GET /ready
                http-check expect status 200
                default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
            \(servers.joined(separator: "\n"))

            """
    }

    /// Starts HAProxy in the foreground with its configuration in `directory`; throws if it is
    /// not installed or does not start.
    static func start(in directory: String, addresses: [String], port: Int) throws -> Balancer {
        guard let executable else {
            throw CommandFailed(description: "partition --balancer: needs HAProxy (apt-get install haproxy)")
        }
        let listen = 18500 + Int(getpid() % 400)
        let path = directory + "/haproxy.cfg"
        try configuration(listen: listen, addresses: addresses, port: port).write(toFile: path, atomically: true, encoding: .utf8)
        try FaultNetwork.run(executable, ["-c", "-q", "-f", path])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-db", "-f", path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return Balancer(process: process, port: listen)
    }

    /// Stops HAProxy.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
