import Foundation
@testable import ParleyServer
import Testing

/// C1 controls (U+009B is a terminal's escape introducer) and direction overrides in an
/// export's attachment names: only C0 controls and DEL were replaced.
@Suite struct ExportFileNameC1Tests {
    @Test(arguments: [("a\u{9B}31m.txt", "a_31m.txt"), ("a\u{85}b.txt", "a_b.txt"), ("invoice\u{202E}fdp.exe", "invoice_fdp.exe")])
    func c1ControlsAndOverridesAreReplaced(name: String, safe: String) {
        #expect(DataLifecycle.safeName(name) == safe)
    }
}
