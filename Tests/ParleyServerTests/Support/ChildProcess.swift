import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for the tests that run real programs (`parley`,
/// nginx). Foundation's `Process.run()` crashed inside the test process now and then (a
/// memmove of a bad pointer while many servers started around it), even with every start
/// serialized; this does only what the tests need and nothing behind their back.
final class ChildProcess: Sendable {
    let processIdentifier: pid_t
    private let exit = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments` and `environment`; its standard output and error
    /// go to `output` (a file descriptor; /dev/null when nil), its standard input is /dev/null.
    init(executable: String, arguments: [String], environment: [String: String], output: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if let output {
            posix_spawn_file_actions_adddup2(&actions, output, 1)
            posix_spawn_file_actions_adddup2(&actions, output, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // Nothing else of this process goes along: a child holding a copy of a test server's
        // listening or connected socket keeps it open after the server closed it (a restart on
        // that port then hangs, a peer never sees the close).
        guard let closeFrom = Self.addCloseFrom else {
            throw NSError(domain: NSPOSIXErrorDomain, code: Int(ENOSYS), userInfo: [NSLocalizedDescriptionKey: "posix_spawn_file_actions_addclosefrom_np is missing"])
        }
        _ = closeFrom(&actions, 3)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else {
            throw NSError(domain: NSPOSIXErrorDomain, code: Int(result), userInfo: [NSLocalizedDescriptionKey: "cannot start \(executable)"])
        }
        processIdentifier = pid
    }

    /// Whether it has not exited yet (reaps it when it has).
    var isRunning: Bool {
        exit.withLock { exit in
            guard exit == nil else { return false }
            var status: Int32 = 0
            let reaped = waitpid(processIdentifier, &status, WNOHANG)
            if reaped == processIdentifier { exit = Self.decode(status) }
            return exit == nil && reaped == 0
        }
    }

    /// Blocks until it exits; returns its exit code (128 + the signal when a signal ended it).
    @discardableResult
    func waitUntilExit() -> Int32 {
        if let done = exit.withLock({ $0 }) { return done }
        var status: Int32 = 0
        while waitpid(processIdentifier, &status, 0) == -1 && errno == EINTR {}
        let code = Self.decode(status)
        return exit.withLock { exit in
            if exit == nil { exit = code }
            return exit!
        }
    }

    /// The exit code, once it has exited.
    var terminationStatus: Int32 { exit.withLock { $0 } ?? -1 }

    func signal(_ number: Int32) { _ = kill(processIdentifier, number) }
    func terminate() { signal(SIGTERM) }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    static func decode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
