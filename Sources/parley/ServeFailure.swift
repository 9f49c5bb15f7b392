import Foundation
import NIOCore

/// What `parley serve` says when the server cannot go on: a sentence a person can act on,
/// not the socket library's description ("bind(descriptor:ptr:bytes:): Address already in
/// use) (errno: 98)").
enum ServeFailure {
    static func describe(_ error: any Error, host: String, port: Int) -> String {
        if let io = error as? IOError {
            switch io.errnoCode {
            case EADDRINUSE:
                return "\(host):\(port) is already in use (another `parley serve`?): stop it, or choose another port with --port"
            case EACCES:
                return "not allowed to listen on \(host):\(port) (ports below 1024 need privileges): choose another with --port"
            case EADDRNOTAVAIL:
                return "\(host) is not an address of this machine: check --host"
            default:
                return "\(String(cString: strerror(io.errnoCode))) (\(io.description))"
            }
        }
        return "\(error)"
    }
}
