import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization
import UnixSignals
import ParleyStorage

/// HTTPS and WSS on the server's one port (`--tls-cert`, `--tls-key`): TLS 1.2 or newer,
/// HTTP/1.1. The certificate and key are read again on SIGHUP: new connections get the new
/// ones, open connections keep theirs, and files that do not load leave the old pair in use.
public struct TLSFiles: Sendable, Equatable {
    /// PEM: the certificate, then any intermediates.
    public var certificatePath: String
    /// PEM: the certificate's private key.
    public var keyPath: String

    /// The certificate and key files at these paths.
    public init(certificatePath: String, keyPath: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }

    /// The server context these files make; throws a `ServerStartError` that names the file.
    func makeContext() throws -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw ServerStartError("Cannot read the TLS certificate \(certificatePath): \(error)")
        }
        guard !chain.isEmpty else { throw ServerStartError("No certificate in \(certificatePath)") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        } catch {
            throw ServerStartError("Cannot read the TLS key \(keyPath): \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw ServerStartError("The TLS certificate and key do not make a usable pair: \(error)")
        }
    }
}

/// The context new connections get; replaced by a reload.
final class TLSContextBox: Sendable {
    private let context: Mutex<NIOSSLContext>
    let files: TLSFiles

    init(files: TLSFiles) throws {
        self.files = files
        context = Mutex(try files.makeContext())
    }

    var current: NIOSSLContext { context.withLock { $0 } }

    /// Loads the files again; on failure the old context stays and the error is thrown.
    func reload() throws {
        let fresh = try files.makeContext()
        context.withLock { $0 = fresh }
    }
}

/// The child channel with TLS in front when a context box is given (plain otherwise).
struct OptionalTLSChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let tls: TLSContextBox?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        if let tls {
            do {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.current), position: .first)
            } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Reloads the certificate on SIGHUP until shutdown.
struct TLSReloader: Service {
    let box: TLSContextBox
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                try box.reload()
                logger.notice("Reloaded the TLS certificate", metadata: ["certificate": "\(box.files.certificatePath)"])
            } catch {
                logger.error("Kept the previous TLS certificate: the new files do not load", metadata: ["error": "\(error)"])
            }
        }
    }
}
