import Foundation
import ParleyTestSupport
import Testing

/// The shape the codebase keeps, read from its files so a change that breaks it fails here
/// with the file named: no source file a reader cannot hold in their head (400 lines, Swift
/// or JavaScript), every `@unchecked Sendable` with the `SAFETY:` comment that says why it is
/// sound, and no thread parked on a semaphore in the server or SDK (the stores run their rules
/// inline, see `InlineAsync`).
@Suite struct CodeShapeTests {
    static func files(under folder: String, endingIn suffixes: [String]) throws -> [(path: String, text: String)] {
        let root = Repository.url(folder)
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return try paths.filter { path in suffixes.contains { path.hasSuffix($0) } }.sorted().map {
            ("\(folder)/\($0)", try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8))
        }
    }

    static var sources: [(path: String, text: String)] {
        get throws { try files(under: "Sources", endingIn: [".swift", ".js"]) }
    }

    @Test func noSourceFileIsOver400Lines() throws {
        let sources = try Self.sources
        #expect(sources.count > 300, "the sources are found")
        for file in sources {
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false).count - (file.text.hasSuffix("\n") ? 1 : 0)
            #expect(lines <= 400, "\(file.path) has \(lines) lines")
        }
    }

    @Test func everyUncheckedSendableSaysWhyItIsSound() throws {
        var found = 0
        for file in try Self.sources where file.path.hasSuffix(".swift") {
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where line.contains("@unchecked Sendable") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                found += 1
                // The reason sits in the lines just above or just below the declaration.
                let around = lines[max(0, index - 3)...min(lines.count - 1, index + 3)]
                #expect(around.contains { $0.contains("SAFETY:") }, "\(file.path):\(index + 1) has no SAFETY: comment")
            }
        }
        #expect(found > 0, "the scan sees the declarations it checks")
    }

    @Test func noThreadIsParkedOnASemaphore() throws {
        for file in try Self.sources where file.path.hasSuffix(".swift") {
            for (index, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("DispatchSemaphore") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                Issue.record("\(file.path):\(index + 1) uses a DispatchSemaphore")
            }
        }
    }
}
