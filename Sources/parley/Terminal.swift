import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Terminal helpers: passwords without echo and readable message lines.
enum Terminal {
    /// The password from `PARLEY_PASSWORD`, or typed at a prompt without echo.
    static func password(prompt: String) -> String? {
        if let fromEnvironment = ProcessInfo.processInfo.environment["PARLEY_PASSWORD"] { return fromEnvironment }
        FileHandle.standardError.write(Data(prompt.utf8))
        var original = termios()
        let isTerminal = tcgetattr(STDIN_FILENO, &original) == 0
        if isTerminal {
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        }
        defer {
            if isTerminal {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
                FileHandle.standardError.write(Data("\n".utf8))
            }
        }
        return readLine(strippingNewline: true)
    }

    /// `HH:mm:ss` in local time, for message lines.
    static func clock(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }
}
