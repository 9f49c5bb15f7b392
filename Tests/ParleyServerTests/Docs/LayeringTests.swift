import Foundation
import ParleyTestSupport
import Testing

/// The layers as docs/architecture.md draws them: the stores (ParleyStorage, what every store
/// is; ParleySQLite and ParleyPostgres, one a target) see neither the chat rules (ParleyRules)
/// nor HTTP, nor each other, and the rules see the stores' primitives and nothing of
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

    /// A target's declaration in the manifest: from its name to the next target's.
    static func manifestTarget(_ name: String) throws -> String {
        let manifest = try String(contentsOf: Repository.url("Package.swift"), encoding: .utf8)
        let start = try #require(manifest.range(of: "name: \"\(name)\""))
        return String(manifest[start.upperBound...]).components(separatedBy: ".target(").first ?? ""
    }

    /// What no store may import: the server, the rules, HTTP.
    static func aboveTheStores(_ module: String) -> Bool {
        module.hasPrefix("Hummingbird") || ["ParleyServer", "ParleyRules", "NIOHTTP1"].contains(module)
    }

    @Test func theStoresImportNeitherTheServerNorHTTP() throws {
        for (folder, least) in [("Sources/ParleyStorage", 12), ("Sources/ParleySQLite", 20), ("Sources/ParleyPostgres", 20)] {
            let files = try Self.swiftFiles(under: folder)
            #expect(files.count > least, "the stores are in \(folder)")
            for file in files {
                let banned = Self.imports(file.text).filter(Self.aboveTheStores)
                #expect(banned.isEmpty, "\(file.path) imports \(banned)")
            }
        }
        for name in ["ParleyStorage", "ParleySQLite", "ParleyPostgres"] {
            let target = try Self.manifestTarget(name)
            #expect(!target.contains("\"ParleyServer\"") && !target.contains("\"ParleyRules\"") && !target.contains("hummingbird"),
                    "\(name) depends on the server, the rules or HTTP")
        }
    }

    /// Each store sees what every store is (ParleyStorage) and its own database, never the
    /// other store; and what every store is depends on no database at all.
    @Test func eachStoreIsATargetThatSeesNoOtherDatabase() throws {
        let databases: [String: Set<String>] = [
            "ParleyStorage": ["GRDB", "GRDBSQLite", "PostgresNIO", "ParleySQLite", "ParleyPostgres"],
            "ParleySQLite": ["PostgresNIO", "ParleyPostgres"],
            "ParleyPostgres": ["GRDB", "GRDBSQLite", "ParleySQLite"],
        ]
        for (name, banned) in databases {
            for file in try Self.swiftFiles(under: "Sources/\(name)") {
                let wrong = Set(Self.imports(file.text)).intersection(banned)
                #expect(wrong.isEmpty, "\(file.path) imports \(wrong.sorted())")
            }
            let target = try Self.manifestTarget(name)
            for module in banned where target.contains("\"\(module)\"") {
                Issue.record("\(name) depends on \(module)")
            }
        }
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
