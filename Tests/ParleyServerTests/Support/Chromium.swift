import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyBench
import ParleyClient
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium driven over the DevTools protocol, with the WebSocket client the SDK uses:
/// one browser, each page in its own browser context (its own storage: its own user).
final class Chromium: Sendable {
    private let pid: pid_t
    private let profile: String
    private let connection: DevTools

    /// Starts Chromium (from Debian's `chromium` package; .ci/run installs it), speaking the
    /// DevTools protocol over a pipe (`--remote-debugging-pipe`: file descriptors 3 and 4).
    static func launch() async throws -> Chromium {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("parley-chromium-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        var toChromium: [Int32] = [0, 0]
        var fromChromium: [Int32] = [0, 0]
        guard pipe(&toChromium) == 0, pipe(&fromChromium) == 0 else { throw ClientError(kind: .transport, message: "pipe failed") }
        let pid = try Spawn.start("chromium", [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--user-data-dir=\(profile)",
            "--no-first-run", "--no-default-browser-check", "--disable-background-timer-throttling",
            "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows", "about:blank",
        ], output: profile + "/chromium.log", descriptors: [(toChromium[0], 3), (fromChromium[1], 4)],
            closing: [toChromium[1], fromChromium[0]])
        Glibc.close(toChromium[0])
        Glibc.close(fromChromium[1])
        let connection = DevTools(writing: toChromium[1], reading: fromChromium[0])
        do {
            _ = try await connection.call("Browser.getVersion")
        } catch {
            kill(pid, SIGKILL)
            throw ClientError(kind: .transport, message: "Chromium did not answer (is it installed? .ci/run installs it): \(error)")
        }
        return Chromium(pid: pid, profile: profile, connection: connection)
    }

    private init(pid: pid_t, profile: String, connection: DevTools) {
        self.pid = pid
        self.profile = profile
        self.connection = connection
    }

    /// A new tab in a fresh browser context (no cookies, storage or IndexedDB shared).
    func newPage(_ name: String, width: Int = 1280, height: Int = 800) async throws -> BrowserPage {
        let context = try await connection.call("Target.createBrowserContext", ["disposeOnDetach": true])
        let target = try await connection.call("Target.createTarget", ["url": "about:blank", "browserContextId": context["browserContextId"] as Any])
        let attached = try await connection.call("Target.attachToTarget", ["targetId": target["targetId"] as Any, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw ClientError(kind: .transport, message: "no session") }
        let page = BrowserPage(name: name, session: session, connection: connection)
        for domain in ["Runtime.enable", "Log.enable", "Page.enable", "DOM.enable"] { _ = try await page.call(domain) }
        _ = try await page.call("Emulation.setFocusEmulationEnabled", ["enabled": true])
        try await page.viewport(width: width, height: height)
        return page
    }

    func close() async {
        _ = try? await connection.call("Browser.close")
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        connection.close()
        try? FileManager.default.removeItem(atPath: profile)
    }

}

/// Child processes for the client tests, started with posix_spawn: with an empty signal mask
/// and default signal handling (a thread of the test process blocks most signals, and a child
/// inherits that: tmux then never hears SIGCHLD or kill-server), stdin from /dev/null, output
/// to a file.
enum Spawn {
    static func start(
        _ program: String, _ arguments: [String], output: String, descriptors: [(Int32, Int32)] = [], closing: [Int32] = []
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        for descriptor in closing { posix_spawn_file_actions_addclose(&actions, descriptor) }
        for (parent, child) in descriptors { posix_spawn_file_actions_adddup2(&actions, parent, child) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, &attributes, argv, environ)
        guard result == 0 else { throw ClientError(kind: .transport, message: "cannot start \(program) (error \(result)): .ci/run installs it") }
        return pid
    }

    /// Runs a program to its end; its exit status and output.
    static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let pid = try start(program, arguments, output: path)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return (status, String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self))
    }
}

/// One DevTools connection over a pipe (messages are JSON, each ended by a NUL byte):
/// commands matched to replies by id, events handed to the page they belong to.
final class DevTools: Sendable {
    private struct State {
        var nextId = 1
        var waiting: [Int: CheckedContinuation<Data, any Error>] = [:]
        var listeners: [String: @Sendable (String, [String: Any]) -> Void] = [:]
        var closed = false
    }

    private let state = Mutex(State())
    private let writing: Int32
    private let writeLock = Mutex(())

    init(writing: Int32, reading: Int32) {
        self.writing = writing
        // A blocking reader on a thread of its own.
        let reader = Thread { [self] in
            var pending = Data()
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = read(reading, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                pending.append(contentsOf: buffer[0..<count])
                while let end = pending.firstIndex(of: 0) {
                    self.receive(pending[pending.startIndex..<end])
                    pending = pending[(end + 1)...]
                }
                pending = Data(pending)
            }
            Glibc.close(reading)
            self.failAll()
        }
        reader.start()
    }

    func listen(session: String, _ handler: @escaping @Sendable (String, [String: Any]) -> Void) {
        state.withLock { $0.listeners[session] = handler }
    }

    /// Sends a command (to a page's session when given) and waits for its result.
    func call(_ method: String, _ params: [String: Any] = [:], session: String? = nil) async throws -> [String: Any] {
        var message: [String: Any] = ["method": method, "params": params]
        if let session { message["sessionId"] = session }
        let data = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            let id = state.withLock { state -> Int? in
                guard !state.closed else { return nil }
                let id = state.nextId
                state.nextId += 1
                state.waiting[id] = continuation
                return id
            }
            guard let id else { return continuation.resume(throwing: ClientError(kind: .transport, message: "DevTools closed")) }
            message["id"] = id
            do {
                var bytes = try JSONSerialization.data(withJSONObject: message)
                bytes.append(0)
                writeLock.withLock { _ in
                    var offset = 0
                    while offset < bytes.count {
                        let written = bytes.withUnsafeBytes { write(writing, $0.baseAddress! + offset, $0.count - offset) }
                        if written < 0 { if errno == EINTR { continue } else { break } }
                        offset += written
                    }
                }
            } catch {
                state.withLock { _ = $0.waiting.removeValue(forKey: id) }
                continuation.resume(throwing: error)
            }
        }
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    private func receive(_ data: Data) {
        guard let message = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        if let id = message["id"] as? Int {
            guard let continuation = state.withLock({ $0.waiting.removeValue(forKey: id) }) else { return }
            if let error = message["error"] as? [String: Any] {
                continuation.resume(throwing: ClientError(kind: .server, message: "DevTools: \(error["message"] ?? "") \(error["data"] ?? "")"))
            } else {
                continuation.resume(returning: (try? JSONSerialization.data(withJSONObject: message["result"] ?? [:])) ?? Data("{}".utf8))
            }
        } else if let session = message["sessionId"] as? String, let method = message["method"] as? String,
            let listener = state.withLock({ $0.listeners[session] }) {
            listener(method, message["params"] as? [String: Any] ?? [:])
        }
    }

    private func failAll() {
        let waiting = state.withLock { state -> [CheckedContinuation<Data, any Error>] in
            state.closed = true
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume(throwing: ClientError(kind: .transport, message: "DevTools closed")) }
    }

    func close() {
        Glibc.close(writing)
    }
}

/// A tab, driven as a person would use it: through the page's stable hooks.
final class BrowserPage: Sendable {
    let name: String
    private let session: String
    private let connection: DevTools
    private let report = Mutex<(problems: [String], log: [String])>(([], []))

    init(name: String, session: String, connection: DevTools) {
        self.name = name
        self.session = session
        self.connection = connection
        connection.listen(session: session) { [weak self] method, params in
            self?.report.withLock { report in
                switch method {
                case "Runtime.exceptionThrown":
                    let details = params["exceptionDetails"] as? [String: Any]
                    let exception = details?["exception"] as? [String: Any]
                    report.problems.append("exception: \(exception?["description"] ?? details?["text"] ?? "?")")
                case "Runtime.consoleAPICalled":
                    let text = (params["args"] as? [[String: Any]] ?? []).map { "\($0["value"] ?? $0["description"] ?? "")" }.joined(separator: " ")
                    report.log.append("\(params["type"] ?? ""): \(text)")
                    if params["type"] as? String == "error" { report.problems.append("console.error: \(text)") }
                case "Log.entryAdded":
                    let entry = params["entry"] as? [String: Any] ?? [:]
                    let text = "\(entry["text"] ?? "")"
                    report.log.append("log \(entry["level"] ?? "") \(entry["source"] ?? ""): \(text)")
                    // Failed requests while the server is down on purpose are expected; CSP reports and script errors are not.
                    if entry["level"] as? String == "error", entry["source"] as? String != "network" { report.problems.append("log: \(text)") }
                    if text.contains("Content Security Policy") || text.contains("Refused to") { report.problems.append("CSP: \(text)") }
                default: break
                }
            }
        }
    }

    /// Script errors and CSP violations seen so far.
    var problems: [String] { report.withLock { $0.problems } }
    var consoleLog: [String] { report.withLock { $0.log } }

    func call(_ method: String, _ params: [String: Any] = [:]) async throws -> [String: Any] {
        try await connection.call(method, params, session: session)
    }

    func viewport(width: Int, height: Int) async throws {
        _ = try await call("Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600])
    }

    func goto(_ url: String) async throws {
        _ = try await call("Page.navigate", ["url": url])
        try await waitFor("document.readyState === 'complete'")
    }

    /// Runs JavaScript in the page (awaiting a promise) and returns its value.
    @discardableResult
    func eval(_ expression: String) async throws -> Any? {
        let answer = try await call(
            "Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true, "userGesture": true])
        if let details = answer["exceptionDetails"] as? [String: Any] {
            let exception = details["exception"] as? [String: Any]
            throw ClientError(kind: .server, message: "\(name): \(exception?["description"] ?? details["text"] ?? "script failed") in \(expression)")
        }
        return (answer["result"] as? [String: Any])?["value"]
    }

    /// Waits until the expression is truthy; returns its value.
    @discardableResult
    func waitFor(_ expression: String, _ what: String? = nil, timeout: Duration = .seconds(15)) async throws -> Any {
        let deadline = ContinuousClock.now + timeout
        var last: Any? = nil
        while ContinuousClock.now < deadline {
            do {
                last = try await eval(expression)
                if let value = last, Self.truthy(value) { return value }
            } catch {
                last = "\(error)"
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ClientError(kind: .transport, message: "\(name): timed out waiting for \(what ?? expression) (last: \(last.map { "\($0)" } ?? "nil"))")
    }

    static func truthy(_ value: Any) -> Bool {
        switch value {
        case let bool as Bool: bool
        case let number as NSNumber: number != 0
        case let string as String: !string.isEmpty
        case is NSNull: false
        default: true
        }
    }

    static func literal(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast().description
    }

    func click(_ selector: String) async throws {
        let s = Self.literal(selector)
        try await waitFor("!!document.querySelector(\(s))", selector)
        try await eval("document.querySelector(\(s)).click(), true")
    }

    /// Types like a person: focus the field, then insert the text (input events fire).
    func type(_ selector: String, _ text: String) async throws {
        try await eval("(() => { const e = document.querySelector(\(Self.literal(selector))); e.focus(); e.value = ''; return true })()")
        _ = try await call("Input.insertText", ["text": text])
    }

    func fill(_ selector: String, _ value: String) async throws {
        try await eval("""
            (() => { const e = document.querySelector(\(Self.literal(selector))); e.value = \(Self.literal(value));
              e.dispatchEvent(new Event('input', {bubbles: true})); return true })()
            """)
    }

    func press(_ key: String) async throws {
        let code = ["Enter": 13, "Escape": 27][key] ?? 0
        var down: [String: Any] = ["type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code]
        if key == "Enter" { down["text"] = "\r" }
        _ = try await call("Input.dispatchKeyEvent", down)
        _ = try await call("Input.dispatchKeyEvent", ["type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code])
    }

    func setFiles(_ selector: String, _ paths: [String]) async throws {
        let document = try await call("DOM.getDocument", ["depth": 0])
        let root = (document["root"] as? [String: Any])?["nodeId"] as Any
        let node = try await call("DOM.querySelector", ["nodeId": root, "selector": selector])
        _ = try await call("DOM.setFileInputFiles", ["nodeId": node["nodeId"] as Any, "files": paths])
    }

    func screenshot(_ path: String) async throws {
        let shot = try await call("Page.captureScreenshot", ["format": "png"])
        guard let base64 = shot["data"] as? String, let data = Data(base64Encoded: base64) else { return }
        try data.write(to: URL(fileURLWithPath: path))
    }
}
