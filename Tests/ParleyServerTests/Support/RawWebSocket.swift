import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client written on a bare TCP socket, for probing the server as a hostile client
/// would: it never answers a close frame, never answers a ping, and goes on sending after the
/// server said goodbye. Blocking calls, run off Swift's cooperative pool (see ``offPool(_:)``).
final class RawWebSocket: @unchecked Sendable {
    // @unchecked: one test drives it from one task at a time; the descriptor is only closed in deinit.
    /// One frame read from the server.
    struct Frame: Sendable {
        var opcode: UInt8
        var payload: [UInt8]
        var text: String { String(decoding: payload, as: UTF8.self) }
        /// The close code of a close frame.
        var closeCode: Int? { opcode == 0x8 && payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : nil }
    }

    private let descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to `127.0.0.1:port` and upgrades `path`; throws if the server does not answer 101.
    init(port: Int, path: String) throws {
        descriptor = try Self.connectLoopback(port: port)
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        try write(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        let deadline = Date().addingTimeInterval(20)
        while !buffer.windowsContains(Array("\r\n\r\n".utf8)) {
            guard try fill(until: deadline) else { throw Failure("no answer to the upgrade") }
        }
        let end = buffer.firstRange(of: Array("\r\n\r\n".utf8))!.upperBound
        let head = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeFirst(end)
        guard head.hasPrefix("HTTP/1.1 101") else { throw Failure("upgrade refused: \(head.prefix(40))") }
    }

    deinit { Glibc.close(descriptor) }

    /// A TCP socket connected to `127.0.0.1:port` (the caller closes it).
    static func connectLoopback(port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            throw Failure("connect: \(errno)")
        }
        return descriptor
    }

    /// Sends a text frame (masked, as a client must); false when the socket is closed.
    @discardableResult
    func send(_ text: String) -> Bool {
        sendFrame(opcode: 0x1, payload: Array(text.utf8))
    }

    /// Sends one frame as given: a fragment (`fin` false), a control frame, or an unmasked
    /// frame no client may send; false when the socket is closed.
    @discardableResult
    func sendFrame(opcode: UInt8, fin: Bool = true, payload: [UInt8], masked: Bool = true) -> Bool {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            frame.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame.append(maskBit | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(maskBit | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        guard masked else { return (try? write(frame + payload)) != nil }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return (try? write(frame)) != nil
    }

    /// The next frame, or nil when the server closed the connection (or `deadline` passed: then
    /// `timedOut` is set).
    func next(until deadline: Date) throws -> Frame? {
        while true {
            if let frame = parse() { return frame }
            guard try fill(until: deadline) else { return nil }
        }
    }

    /// Every frame until the server closes the TCP connection; nil if it is still open at `deadline`.
    func readUntilClosed(until deadline: Date) throws -> [Frame]? {
        var frames: [Frame] = []
        while true {
            if let frame = parse() {
                frames.append(frame)
                continue
            }
            guard try fill(until: deadline) else { return closedByPeer ? frames : nil }
        }
    }

    /// Whether the server closed the TCP connection.
    private(set) var closedByPeer = false

    private func parse() -> Frame? {
        guard buffer.count >= 2 else { return nil }
        let opcode = buffer[0] & 0x0F
        var length = Int(buffer[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            offset = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        guard buffer.count >= offset + length else { return nil }
        let frame = Frame(opcode: opcode, payload: Array(buffer[offset..<offset + length]))
        buffer.removeFirst(offset + length)
        return frame
    }

    /// Reads what has arrived; false at the deadline or when the peer closed.
    private func fill(until deadline: Date) throws -> Bool {
        guard !closedByPeer else { return false }
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left, 0.2) * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                closedByPeer = true
                return false
            }
            buffer += chunk[0..<count]
            return true
        }
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure("send: \(errno)")
            }
            offset += written
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

extension Array where Element == UInt8 {
    fileprivate func windowsContains(_ needle: [UInt8]) -> Bool { firstRange(of: needle) != nil }
}

/// Runs blocking work on a thread of its own, so a test waiting on a socket holds none of the
/// cooperative pool's few threads.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
