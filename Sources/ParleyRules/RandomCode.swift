import Foundation

/// Secrets handed to people and clients (invite codes, mailed links, refresh tokens): 32 random
/// bytes, base64url (43 characters), not to be guessed.
package enum RandomCode {
    /// A new code. Never one that starts with `-`: a command line reads `--invite -x…` or
    /// `parley verify -x…` as another option (1 code in 64 could not be typed; a flaky README
    /// test found it).
    package static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        while true {
            let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let code = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            if !code.hasPrefix("-") { return code }
        }
    }
}
