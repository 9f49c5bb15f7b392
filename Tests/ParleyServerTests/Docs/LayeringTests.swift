import Foundation
import ParleyTestSupport
import Testing

/// The layers as docs/architecture.md draws them: the stores (ParleyStorage) see neither the
/// chat rules nor HTTP, and the chat rules throw the domain's error without knowing HTTP. The
/// package graph enforces the first for the compiler; this reads the sources so a new import
/// or dependency that breaks a layer fails here with the file named.
@Suite struct LayeringTests {
    static func swiftFiles(under folder: String) throws -> [(path: String, text: String)] {
        let root = Repository.url(folder)
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return try paths.filter { $0.hasSuffix(".swift") }.sorted().map {
            ("\(folder)/\($0)", try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8))
        }
    }

    static func imports(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard let at = words.firstIndex(of: "import"), at + 1 < words.count else { return nil }
            return words[..<at].allSatisfy({ $0.hasPrefix("@") }) ? String(words[at + 1]) : nil
        }
    }

    @Test func theStoresImportNeitherTheServerNorHTTP() throws {
        let files = try Self.swiftFiles(under: "Sources/ParleyStorage")
        #expect(files.count > 40, "the stores are in Sources/ParleyStorage")
        for file in files {
            let banned = Self.imports(file.text).filter { $0.hasPrefix("Hummingbird") || $0 == "ParleyServer" || $0 == "NIOHTTP1" }
            #expect(banned.isEmpty, "\(file.path) imports \(banned)")
        }
        let manifest = try String(contentsOf: Repository.url("Package.swift"), encoding: .utf8)
        let start = try #require(manifest.range(of: "name: \"ParleyStorage\""))
        // Its declaration runs to the next target's.
        let target = String(manifest[start.upperBound...]).components(separatedBy: ".target(").first ?? ""
        #expect(!target.contains("\"ParleyServer\"") && !target.contains("hummingbird"), "ParleyStorage depends on the server or HTTP")
    }

    @Test func theChatRulesThrowTheDomainsErrorWithoutHTTP() throws {
        let files = try Self.swiftFiles(under: "Sources/ParleyServer/Chat")
        #expect(files.count > 15)
        for file in files {
            let http = Self.imports(file.text).filter { $0.hasPrefix("Hummingbird") || $0.hasPrefix("NIOHTTP") }
            #expect(http.isEmpty, "\(file.path) imports \(http)")
        }
    }

    @Test func theImportCheckSeesWhatItMust() {
        #expect(Self.imports("import Foundation\n@preconcurrency import Hummingbird\n// import Nothing\nlet x = 1") == ["Foundation", "Hummingbird"])
    }
}
