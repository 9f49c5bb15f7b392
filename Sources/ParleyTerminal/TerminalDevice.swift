import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real terminal: raw mode on the alternate screen, restored on exit and on SIGTERM, SIGHUP
/// and SIGINT; its size; its input as a stream of byte chunks; and drawing only the lines that
/// changed since the last frame.
@MainActor
public final class TerminalDevice {
    private let original: termios?
    private var drawn: [String] = []
    private var drawnSize: (Int, Int) = (0, 0)
    private var signalSources: [any DispatchSourceSignal] = []
    /// Input bytes as they arrive (one chunk per read); ends when stdin closes.
    public let input: AsyncStream<[UInt8]>
    /// One element each time the window is resized (SIGWINCH), from ``enter()`` on.
    public let resizes: AsyncStream<Void>
    private let resized: AsyncStream<Void>.Continuation

    /// Saves the terminal's settings and starts reading stdin; the screen is untouched until
    /// ``enter()``.
    public init() {
        var settings = termios()
        original = tcgetattr(STDIN_FILENO, &settings) == 0 ? settings : nil
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream()
        input = stream
        (resizes, resized) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // A blocking read on a thread of its own, so no task of the pool waits on the keyboard.
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(STDIN_FILENO, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else {
                    continuation.finish()
                    return
                }
                continuation.yield(Array(buffer[0..<count]))
            }
        }
        reader.start()
    }

    /// Raw input (no echo, no line buffering, keys such as Ctrl-C delivered as bytes), the
    /// alternate screen, and handlers that put the terminal back if the process is told to stop.
    public func enter() {
        if var raw = original {
            raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
            raw.c_oflag &= ~tcflag_t(OPOST)
            raw.c_cflag |= tcflag_t(CS8)
            raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
            withUnsafeMutableBytes(of: &raw.c_cc) { bytes in
                bytes[Int(VMIN)] = 1
                bytes[Int(VTIME)] = 0
            }
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        }
        write(Self.enterSequence)
        signalSources = Self.installSignalHandlers(restoring: original, resized: resized)
    }

    /// Handlers for SIGTERM, SIGHUP and SIGINT (restore the terminal, exit 128 + the signal) and
    /// SIGWINCH (one element on ``resizes``).
    ///
    /// Written outside the main actor on purpose: a closure formed in a `@MainActor` method is
    /// isolated to the main actor, and Swift 6 checks that isolation when it runs; Dispatch runs
    /// these on one of its own queues, where that check traps (SIGILL: the client crashed on
    /// every resize and on SIGTERM, leaving the terminal raw). These closures touch only
    /// sendable values and C calls.
    nonisolated private static func installSignalHandlers(
        restoring original: termios?, resized: AsyncStream<Void>.Continuation
    ) -> [any DispatchSourceSignal] {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGHUP, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                restore(original)
                _exit(128 + number)
            }
            source.resume()
            sources.append(source)
        }
        signal(SIGWINCH, SIG_IGN)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        resize.setEventHandler { resized.yield() }
        resize.resume()
        sources.append(resize)
        return sources
    }

    /// The terminal as it was: cooked mode, the main screen, a visible cursor.
    public func leave() {
        Self.restore(original)
    }

    /// What ``enter()`` writes: the alternate screen, a hidden cursor, a clear screen, and
    /// bracketed paste (a paste arrives between ESC[200~ and ESC[201~, so ``KeyParser`` makes
    /// it one ``Key/paste(_:)`` instead of keys, Enter for each line).
    public nonisolated static let enterSequence = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J\u{1B}[?2004h"
    /// What restoring writes (on leaving and on SIGTERM, SIGHUP, SIGINT): every mode
    /// ``enterSequence`` set, undone (the shell after us gets no paste markers).
    public nonisolated static let restoreSequence = "\u{1B}[?2004l\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l"

    nonisolated private static func restore(_ original: termios?) {
        let reset = restoreSequence
        _ = reset.withCString { systemWrite(STDOUT_FILENO, $0, strlen($0)) }
        if var settings = original { tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings) }
    }

    /// Columns and rows (80×24 when the size cannot be read).
    public func size() -> (width: Int, height: Int) {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }

    /// Draws a frame: every line when the size changed, else only the lines that differ; then
    /// puts the cursor on the input line.
    public func draw(_ lines: [String], cursor: (row: Int, column: Int), width: Int, height: Int) {
        var out = "\u{1B}[?25l"
        let resized = drawnSize != (width, height)
        if resized { out += "\u{1B}[2J" }
        for (index, line) in lines.enumerated() where resized || index >= drawn.count || drawn[index] != line {
            out += "\u{1B}[\(index + 1);1H\u{1B}[0m" + line + "\u{1B}[0m\u{1B}[K"
        }
        out += "\u{1B}[\(cursor.row + 1);\(cursor.column + 1)H\u{1B}[?25h"
        drawn = lines
        drawnSize = (width, height)
        write(out)
    }

    /// Rings the terminal's bell (BEL): the terminal beeps, flashes or marks the window, as
    /// its user set it up.
    public func bell() { write("\u{07}") }

    /// Forgets what is on screen, so the next frame draws everything (Ctrl-L).
    public func invalidate() { drawnSize = (0, 0) }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { systemWrite(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

/// `write(2)` (the device's own `write(_:)` hides the C one inside the class).
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, bytes, count)
    #else
    Darwin.write(descriptor, bytes, count)
    #endif
}
