import Foundation
import ParleyTestSupport
import Testing

/// The layers as docs/architecture.md draws them: the stores (ParleyStorage) see neither the
/// chat rules (ParleyRules) nor HTTP, and the rules see the stores' primitives and nothing of
/// HTTP or sockets. The package graph enforces it for the compiler; this reads the sources and
/// the manifest so a new import or dependency that breaks a layer fails here with its file named.
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
            let banned = Self.imports(file.text).filter {
                $0.hasPrefix("Hummingbird") || ["ParleyServer", "ParleyRules", "NIOHTTP1"].contains($0)
            }
            #expect(banned.isEmpty, "\(file.path) imports \(banned)")
        }
        let manifest = try String(contentsOf: Repository.url("Package.swift"), encoding: .utf8)
        let start = try #require(manifest.range(of: "name: \"ParleyStorage\""))
        // Its declaration runs to the next target's.
        let target = String(manifest[start.upperBound...]).components(separatedBy: ".target(").first ?? ""
        #expect(!target.contains("\"ParleyServer\"") && !target.contains("\"ParleyRules\"") && !target.contains("hummingbird"),
                "ParleyStorage depends on the server, the rules or HTTP")
    }

    @Test func theChatRulesSeeTheStoresPrimitivesAndNothingOfHTTP() throws {
        let files = try Self.swiftFiles(under: "Sources/ParleyRules")
        #expect(files.count > 12, "the rules are in Sources/ParleyRules")
        for file in files {
            let outside = Set(Self.imports(file.text)).subtracting(["Foundation", "ParleyProtocol", "ParleyStorage", "Synchronization"])
            #expect(outside.isEmpty, "\(file.path) imports \(outside.sorted())")
        }
    }

    @Test func theImportCheckSeesWhatItMust() {
        #expect(Self.imports("import Foundation\n@preconcurrency import Hummingbird\n// import Nothing\nlet x = 1") == ["Foundation", "Hummingbird"])
    }
}
