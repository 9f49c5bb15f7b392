import Foundation
import SwiftParser
import SwiftParserDiagnostics
import SwiftSyntax
import Testing

/// SwiftUI compiles only on Apple platforms, so CI here cannot build ParleyUI or the example
/// app. These tests keep what can be checked without a compiler: every file parses, the SDK
/// names they use exist with the argument labels used, nothing is force-unwrapped, every public
/// declaration is documented, and the README shows the example app's code as it is.
@Suite struct SwiftUISourceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func swiftFiles(under folder: String) -> [URL] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
            .filter { !$0.path.contains("/.build") }.sorted { $0.path < $1.path }
    }

    /// The SwiftUI sources: the ParleyUI library and the example app.
    static var uiFiles: [URL] { swiftFiles(under: "Sources/ParleyUI") + swiftFiles(under: "Examples/ParleyChatApp") }

    static func parse(_ file: URL) throws -> SourceFileSyntax {
        Parser.parse(source: try String(contentsOf: file, encoding: .utf8))
    }

    static func relative(_ file: URL) -> String { String(file.path.dropFirst(root.path.count + 1)) }

    @Test func theSwiftUIFilesExistAndParseWithoutErrors() throws {
        let files = Self.uiFiles
        let names = Set(files.map(\.lastPathComponent))
        for expected in ["ParleyChat.swift", "ConversationListView.swift", "ChatView.swift", "MessageInputBar.swift",
                         "ConnectionBanner.swift", "SignInView.swift", "ChatApp.swift"] {
            #expect(names.contains(expected), "\(expected) is missing")
        }
        for file in files {
            let tree = try Self.parse(file)
            let diagnostics = ParseDiagnosticsGenerator.diagnostics(for: tree)
            #expect(diagnostics.isEmpty, "\(Self.relative(file)): \(diagnostics.map { "\($0.location(converter: SourceLocationConverter(fileName: file.path, tree: tree))): \($0.message)" })")
        }
    }

    @Test func parleyUIIsSkippedWhereSwiftUIDoesNotExist() throws {
        for file in Self.swiftFiles(under: "Sources/ParleyUI") {
            let text = try String(contentsOf: file, encoding: .utf8)
            let code = text.split(separator: "\n").filter { !$0.hasPrefix("//") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            #expect(code.first == "#if canImport(SwiftUI)" && code.last == "#endif", "\(Self.relative(file)) is not wrapped in #if canImport(SwiftUI)")
        }
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains("#if os(macOS)") && manifest.contains(#"name: "ParleyUI""#))
    }

    /// APIs newer than the declared floor (iOS 17, macOS 14), from the last two OS releases
    /// (iOS 18 / macOS 15, iOS 26 / macOS 26), with a line each that the scan must catch.
    static let newerThanTheFloor: [(api: String, pattern: String, sample: String)] = [
        ("Synchronization (iOS 18)", #"\bimport Synchronization\b"#, "import Synchronization"),
        ("Synchronization.Mutex (iOS 18)", #"\bMutex\s*[<(]"#, "let names = Mutex<[String]>([])"),
        ("Synchronization.Atomic (iOS 18)", #"\bAtomic\s*[<(]"#, "let count = Atomic<Int>(0)"),
        ("Observation.Observations (iOS 26)", #"\bObservations\s*[({]"#, "for await value in Observations { model.count } {}"),
        ("SwiftUI ScrollPosition (iOS 18)", #"\bScrollPosition\s*\("#, "@State var position = ScrollPosition(edge: .bottom)"),
        ("SwiftUI onScrollGeometryChange (iOS 18)", #"\.onScrollGeometryChange\b"#, ".onScrollGeometryChange(for: CGFloat.self) { $0.contentOffset.y } action: { _, _ in }"),
        ("SwiftUI onScrollVisibilityChange (iOS 18)", #"\.onScrollVisibilityChange\b"#, ".onScrollVisibilityChange { visible in }"),
        ("SwiftUI MeshGradient (iOS 18)", #"\bMeshGradient\s*\("#, "MeshGradient(width: 2, height: 2, points: [], colors: [])"),
        ("SwiftUI Tab (iOS 18)", #"(^|[^\w.])Tab\s*\("#, #"Tab("Chats", systemImage: "bubble") { List {} }"#),
        ("SwiftUI navigationTransition (iOS 18)", #"\.navigationTransition\s*\("#, ".navigationTransition(.zoom(sourceID: id, in: namespace))"),
        ("SwiftUI matchedTransitionSource (iOS 18)", #"\.matchedTransitionSource\s*\("#, ".matchedTransitionSource(id: id, in: namespace)"),
        ("SwiftUI presentationSizing (iOS 18)", #"\.presentationSizing\s*\("#, ".presentationSizing(.form)"),
        ("SwiftUI glassEffect (iOS 26)", #"\.glassEffect\b|\bGlassEffectContainer\b"#, ".glassEffect(.regular, in: .capsule)"),
        ("Foundation Calendar.RecurrenceRule (iOS 18)", #"\bRecurrenceRule\b"#, "let rule = Calendar.RecurrenceRule.daily(calendar: .current)"),
        ("Foundation #Expression (iOS 18)", #"#Expression\b|\bExpression\s*<"#, "let twice = #Expression<Int, Int> { $0 * 2 }"),
        ("Foundation NotificationCenter messages (iOS 26)", #"\b(MainActorMessage|AsyncMessage)\b"#, "struct Moved: NotificationCenter.MainActorMessage {}"),
    ]

    /// The code Apple platforms compile (the protocol, the SDK, the SwiftUI screens) builds at
    /// the platforms Package.swift declares (iOS 17, macOS 14): none of the APIs above outside
    /// code only Linux compiles; and the scan catches each kind it lists.
    @Test func theAppleFacingModulesUseNothingAboveTheirDeclaredPlatforms() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(".iOS(.v17)") && manifest.contains(".macOS(.v14)"), "the floor this test guards")
        let patterns = try Self.newerThanTheFloor.map { ($0.api, try NSRegularExpression(pattern: $0.pattern)) }
        func newer(_ line: String) -> [String] {
            patterns.filter { $0.1.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil }.map(\.0)
        }
        var found: [String] = []
        for folder in ["Sources/ParleyProtocol", "Sources/ParleyClient", "Sources/ParleyUI", "Examples/ParleyChatApp"] {
            for file in Self.swiftFiles(under: folder) {
                let text = try String(contentsOf: file, encoding: .utf8)
                for (line, place) in Self.linesAppleCompiles(text) where !newer(line).isEmpty {
                    found.append("\(Self.relative(file)):\(place): \(newer(line)): \(line)")
                }
            }
        }
        #expect(found.isEmpty, "above iOS 17 / macOS 14:\n\(found.joined(separator: "\n"))")
        // The scan itself: each kind is caught by its own pattern...
        for entry in Self.newerThanTheFloor {
            #expect(newer(entry.sample).contains(entry.api), "\(entry.api) is not caught in: \(entry.sample)")
        }
        // ...and what the floor has is not: iOS 17's scroll position binding, a TabView, a
        // lock of NIO's, Observation's tracking.
        for fine in ["ScrollView {}.scrollPosition(id: $top)", "TabView { List {} }", "let box = NIOLockedValueBox(0)",
                     "withObservationTracking { model.count } onChange: {}", "let tab = selectedTab(1)"] {
            #expect(newer(fine).isEmpty, "\(fine): \(newer(fine))")
        }
        // What `#if os(Linux)` guards is skipped, its `#else` is not.
        let sample = "#if os(Linux)\nlet a = Mutex(0)\n#else\nlet b = Mutex(1)\n#endif\n// Mutex in a comment\nlet c = 1"
        #expect(Self.linesAppleCompiles(sample).map(\.0).filter { $0.contains("Mutex") } == ["let b = Mutex(1)"])
    }

    /// The code lines (not comments) of `text` outside `#if os(Linux)` and
    /// `#if canImport(FoundationNetworking)` branches, with their line numbers.
    static func linesAppleCompiles(_ text: String) -> [(String, Int)] {
        var stack: [Bool] = []  // per open #if: whether the current branch is Linux-only
        var lines: [(String, Int)] = []
        for (index, raw) in text.components(separatedBy: "\n").enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let linuxOnly = { (condition: Substring) in
                !condition.contains("!") && !condition.contains("||")
                    && (condition.contains("os(Linux)") || condition.contains("canImport(FoundationNetworking)")
                        || condition.contains("canImport(Glibc)"))
            }
            if line.hasPrefix("#if ") {
                stack.append(linuxOnly(line.dropFirst(4)))
            } else if line.hasPrefix("#elseif ") {
                if !stack.isEmpty { stack[stack.count - 1] = linuxOnly(line.dropFirst(8)) }
            } else if line == "#else" {
                if !stack.isEmpty { stack[stack.count - 1] = false }
            } else if line == "#endif" {
                _ = stack.popLast()
            } else if !stack.contains(true), !line.hasPrefix("//") {
                lines.append((line, index + 1))
            }
        }
        return lines
    }

    @Test func nothingIsForceUnwrappedAndEveryPublicDeclarationIsDocumented() throws {
        for file in Self.uiFiles {
            let tree = try Self.parse(file)
            let audit = Audit(viewMode: .sourceAccurate)
            audit.walk(tree)
            #expect(audit.forced.isEmpty, "\(Self.relative(file)) force-unwraps or try!s: \(audit.forced)")
            #expect(audit.undocumented.isEmpty, "\(Self.relative(file)) has undocumented public declarations: \(audit.undocumented)")
        }
    }

    /// The documentation bar, over every module (not only the screens): each public or
    /// open declaration, and each requirement of a public protocol, carries a doc comment.
    @Test func everyPublicDeclarationOfEveryModuleIsDocumented() throws {
        var checked = 0
        var missing: [String] = []
        for folder in ["Sources/ParleyProtocol", "Sources/ParleyServer", "Sources/ParleyClient", "Sources/ParleyTerminal",
                       "Sources/ParleyBench", "Sources/ParleyUI", "Sources/parley"] {
            for file in Self.swiftFiles(under: folder) {
                let audit = Audit(viewMode: .sourceAccurate)
                audit.walk(try Self.parse(file))
                checked += audit.checked
                missing += audit.undocumented.map { "\(Self.relative(file)): \($0)" }
            }
        }
        #expect(checked > 500, "the audit sees the public API (\(checked) declarations)")
        #expect(missing.isEmpty, "undocumented public declarations:\n\(missing.joined(separator: "\n"))")
    }

    /// The SDK's public surface is what an app may rely on: the local database, the receipt
    /// batching, the preview samples and the raw socket are the package's own (`package`
    /// access: its other modules and tests use them, an app cannot).
    @Test func theSDKKeepsItsInternalsOutOfThePublicSurface() throws {
        let internals: Set<String> = ["database: LocalDatabase", "ReceiptQueue", "PresentationSamples", "sendRawAwaitingReply"]
        var exposed: [String] = []
        for file in Self.swiftFiles(under: "Sources/ParleyClient") {
            let names = PublicNames(viewMode: .sourceAccurate)
            names.walk(try Self.parse(file))
            exposed += names.all.filter(internals.contains).map { "\(Self.relative(file)): \($0)" }
        }
        #expect(exposed.isEmpty, "public internals: \(exposed)")
        // The check sees what it must.
        let probe = PublicNames(viewMode: .sourceAccurate)
        probe.walk(Parser.parse(source: """
            public actor ChatClient { public nonisolated let database: LocalDatabase; package let quiet: Int }
            public struct ReceiptQueue {}
            extension RealtimeConnection { public func sendRawAwaitingReply() {} }
            """))
        #expect(probe.all.isSuperset(of: ["database: LocalDatabase", "ReceiptQueue", "sendRawAwaitingReply"]) && !probe.all.contains("quiet: Int"))
    }

    /// The audit itself: an undocumented public function, property, protocol requirement and
    /// type are caught; documented, internal and private ones are not.
    @Test func theDocumentationAuditCatchesWhatItMust() {
        let audit = Audit(viewMode: .sourceAccurate)
        audit.walk(Parser.parse(source: """
            /// Documented.
            public struct A {
                public var bare: Int
                /// Documented.
                public var documented: Int
                var internalOne: Int
                private func hidden() {}
                @discardableResult public func noted() -> Int { 0 }
            }
            public protocol P {
                func requirement()
                /// Documented.
                var documented: Int { get }
            }
            protocol Internal { func quiet() }
            public typealias Alias = Int
            public actor Worker {}
            """))
        #expect(Set(audit.undocumented) == ["bare: Int", "noted", "requirement", "Alias", "Worker", "P"], "\(audit.undocumented)")
    }

    /// What the SDK declares: member names and initializer/function parameter lists by type.
    @Test func everySDKTypeMemberAndLabelTheScreensUseExists() throws {
        let sdk = Declarations(viewMode: .sourceAccurate)
        for folder in ["Sources/ParleyClient", "Sources/ParleyProtocol", "Sources/ParleyUI"] {
            for file in Self.swiftFiles(under: folder) { sdk.walk(try Self.parse(file)) }
        }
        // Sanity: the collector sees what it must, or the checks below could not fail.
        #expect(sdk.members["ChatPresentation"]?.contains("timeline") == true)
        #expect(sdk.members["ChatModel"]?.contains("send") == true)
        #expect(sdk.functions["ChatPresentation.listRow"]?.isEmpty == false)

        var checked = 0
        for file in Self.uiFiles {
            let tree = try Self.parse(file)
            let uses = Uses(viewMode: .sourceAccurate, sdk: sdk, variables: VariableTypes.of(tree, sdk: sdk))
            uses.walk(tree)
            checked += uses.checked
            #expect(uses.problems.isEmpty, "\(Self.relative(file)): \(uses.problems)")
        }
        #expect(checked > 20, "the screens use the SDK (\(checked) uses checked)")
    }

    /// The checker itself: a wrong member, a wrong label and a missing argument are caught.
    @Test func theNameCheckCatchesWhatACompilerWould() throws {
        let sdk = Declarations(viewMode: .sourceAccurate)
        sdk.walk(Parser.parse(source: """
            public enum Shapes {
                public static func circle(radius: Double, filled: Bool = false) -> Int { 0 }
                public struct Square { public init(side: Double) {} }
            }
            public final class Model { public init(client: Int, names: String = "") {} }
            """))
        let source = Parser.parse(source: """
            struct V { let model: Model; var shapes: [Shapes.Square] }
            let a = Shapes.circle(radius: 1)
            let b = Shapes.circle(radius: 1, filled: true)
            let c = Shapes.Square(side: 2)
            let d = Model(client: 1)
            let e = Shapes.triangle(side: 1)
            let f = Shapes.circle(diameter: 1)
            let g = Model(names: "x")
            let h = Shapes.Square(2)
            let i = model.reload(force: true)
            let j = model.names
            """)
        sdk.walk(Parser.parse(source: "extension Model { public func reload() {} }"))
        let uses = Uses(viewMode: .sourceAccurate, sdk: sdk, variables: VariableTypes.of(source, sdk: sdk))
        uses.walk(source)
        #expect(uses.problems.count == 6, "\(uses.problems)")
        #expect(uses.problems.contains { $0.contains("reload") } && uses.problems.contains { $0.contains("no member names") })
        #expect(uses.problems.contains { $0.contains("triangle") } && uses.problems.contains { $0.contains("diameter") })
        #expect(uses.checked >= 8)
    }

    // MARK: The README's samples

    static func readmeBlock(after heading: String, language: String) throws -> String {
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = text.range(of: "## " + heading),
              let open = text.range(of: "```\(language)\n", range: start.upperBound..<text.endIndex),
              let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else { throw SampleError("README.md has no \(language) block after \"## \(heading)\"") }
        return String(text[open.upperBound..<close.lowerBound])
    }

    @Test func theReadmeShowsTheExampleAppAsItIsAndItIsAtMost15Lines() throws {
        let shown = try Self.readmeBlock(after: "A chat screen in your app", language: "swift")
        let app = try String(contentsOf: Self.root.appendingPathComponent("Examples/ParleyChatApp/Sources/ChatApp.swift"), encoding: .utf8)
        #expect(shown == app)
        let lines = app.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count <= 15, "the integration sample is \(lines.count) lines")
    }

    @Test func theReadmeShowsTheSDKSampleAsTheProgramCIRuns() throws {
        let shown = try Self.readmeBlock(after: "The SDK in a few lines", language: "swift")
        let program = try String(contentsOf: Self.root.appendingPathComponent("Examples/SDKQuickStart/main.swift"), encoding: .utf8)
        guard let begin = program.range(of: "// README:begin\n"), let end = program.range(of: "// README:end") else {
            throw SampleError("Examples/SDKQuickStart/main.swift has no README markers")
        }
        #expect(shown == String(program[begin.upperBound..<end.lowerBound]))
    }
}

