import Foundation
@testable import ParleyServer
import Testing

/// The names attachments get inside a data export (`DataLifecycle.safeName`): whatever an
/// upload was called, its entry stays inside `attachments/` (no zip-slip out of the folder an
/// unzip tool extracts to), opens on every system, and is never empty.
@Suite struct ExportFileNameTests {
    @Test(arguments: [
        ("photo.png", "photo.png"), ("日本語 ファイル.pdf", "日本語 ファイル.pdf"),
        ("../../etc/passwd", "_.._etc_passwd"), ("..\\..\\boot.ini", "_.._boot.ini"), ("/abs/path.txt", "_abs_path.txt"),
        ("C:\\Users\\ada\\cv.docx", "C__Users_ada_cv.docx"), ("a*b?c\"d<e>f|g", "a_b_c_d_e_f_g"),
        ("line\nbreak\t.txt", "line_break_.txt"), ("nul\u{0}.txt", "nul_.txt"), ("del\u{7F}.txt", "del_.txt"),
        ("report. ", "report"), ("  spaced.txt", "spaced.txt"), (".hidden", "hidden"),
    ])
    func namesStayInsideTheFolderAndOpenEverywhere(name: String, safe: String) {
        #expect(DataLifecycle.safeName(name) == safe)
        #expect(!DataLifecycle.safeName(name).contains("/") && !DataLifecycle.safeName(name).contains("\\"))
    }

    /// Nothing left is a name too: "file".
    @Test(arguments: ["", ".", "..", "...", " . ", "   "])
    func anEmptyNameIsFile(name: String) {
        #expect(DataLifecycle.safeName(name) == "file")
    }

    /// 120 characters at most, counted as people count them (never half an emoji).
    @Test func longNamesAreCutAtWholeCharacters() {
        #expect(DataLifecycle.safeName(String(repeating: "a", count: 500)) == String(repeating: "a", count: 120))
        #expect(DataLifecycle.safeName(String(repeating: "👍🏽", count: 200)) == String(repeating: "👍🏽", count: 120))
        #expect(DataLifecycle.safeName(String(repeating: "b", count: 120) + ".png") == String(repeating: "b", count: 120))
    }
}
