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

    /// Issue 11's documentation bar, over every module (not only the screens): each public or
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

struct SampleError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Force unwraps, `try!`, and public declarations without a `///` comment.
final class Audit: SyntaxAnyVisitor {
    var forced: [String] = []
    var undocumented: [String] = []
    /// How many public declarations were looked at.
    var checked = 0
    /// Inside a public protocol, whose requirements are public without a modifier.
    private var publicProtocols = 0

    override func visit(_ node: ForceUnwrapExprSyntax) -> SyntaxVisitorContinueKind {
        forced.append(node.trimmedDescription)
        return .visitChildren
    }

    override func visit(_ node: TryExprSyntax) -> SyntaxVisitorContinueKind {
        if node.questionOrExclamationMark?.tokenKind == .exclamationMark { forced.append(node.trimmedDescription) }
        return .visitChildren
    }

    /// Every declaration with modifiers (types, functions, initializers, properties, subscripts,
    /// type aliases, ...), but imports and extensions, which document nothing of their own.
    override func visitAny(_ node: Syntax) -> SyntaxVisitorContinueKind {
        guard node.is(DeclSyntax.self), !node.is(ImportDeclSyntax.self), !node.is(ExtensionDeclSyntax.self),
              let modifiers = node.asProtocol(WithModifiersSyntax.self)?.modifiers else { return .visitChildren }
        let isPublic = Self.isPublic(modifiers)
        if isPublic || publicProtocols > 0 {
            checked += 1
            let documented = node.leadingTrivia.contains { piece in
                if case .docLineComment = piece { return true }
                if case .docBlockComment = piece { return true }
                return false
            }
            if !documented { undocumented.append(Self.name(of: node)) }
        }
        if isPublic, node.is(ProtocolDeclSyntax.self) { publicProtocols += 1 }
        return .visitChildren
    }

    override func visitAnyPost(_ node: Syntax) {
        if let declaration = node.as(ProtocolDeclSyntax.self), Self.isPublic(declaration.modifiers) { publicProtocols -= 1 }
    }

    static func isPublic(_ modifiers: DeclModifierListSyntax) -> Bool {
        modifiers.contains { $0.name.tokenKind == .keyword(.public) || $0.name.tokenKind == .keyword(.open) }
    }

    static func name(of node: Syntax) -> String {
        if let initializer = node.as(InitializerDeclSyntax.self) { return "init" + initializer.signature.parameterClause.trimmedDescription }
        if let subscriptDecl = node.as(SubscriptDeclSyntax.self) { return "subscript" + subscriptDecl.parameterClause.trimmedDescription }
        if let variable = node.as(VariableDeclSyntax.self) { return variable.bindings.trimmedDescription }
        if let named = node.asProtocol(NamedDeclSyntax.self) { return named.name.text }
        return String(node.trimmedDescription.prefix(60))
    }
}

/// The names of a file's public or open declarations.
final class PublicNames: SyntaxAnyVisitor {
    var all: Set<String> = []

    override func visitAny(_ node: Syntax) -> SyntaxVisitorContinueKind {
        if node.is(DeclSyntax.self), !node.is(ExtensionDeclSyntax.self),
           let modifiers = node.asProtocol(WithModifiersSyntax.self)?.modifiers, Audit.isPublic(modifiers) {
            all.insert(Audit.name(of: node))
        }
        return .visitChildren
    }
}

/// One parameter: its argument label (nil for `_`) and whether it has a default.
struct Parameter: Equatable {
    var label: String?
    var hasDefault: Bool
    var isClosure: Bool
}

/// The SDK's declarations: members by type name, and the parameter lists of each type's
/// initializers (`Type.init`) and functions (`Type.name`). Nested types are known by their own
/// name; extensions add to their type.
final class Declarations: SyntaxVisitor {
    var members: [String: Set<String>] = [:]
    var functions: [String: [[Parameter]]] = [:]
    /// Every type the sources declare (nested ones by their own name).
    var types: Set<String> = []
    /// Top-level types the sources declare: a bare name in a screen means one of these.
    var topLevel: Set<String> = []
    private var stack: [String] = []

    private func enter(_ name: String) {
        if let outer = stack.last { members[outer, default: []].insert(name) } else { topLevel.insert(name) }
        types.insert(name)
        stack.append(name)
    }

    override func visit(_ node: StructDeclSyntax) -> SyntaxVisitorContinueKind { enter(node.name.text); return .visitChildren }
    override func visitPost(_ node: StructDeclSyntax) { stack.removeLast() }
    override func visit(_ node: ClassDeclSyntax) -> SyntaxVisitorContinueKind { enter(node.name.text); return .visitChildren }
    override func visitPost(_ node: ClassDeclSyntax) { stack.removeLast() }
    override func visit(_ node: EnumDeclSyntax) -> SyntaxVisitorContinueKind { enter(node.name.text); return .visitChildren }
    override func visitPost(_ node: EnumDeclSyntax) { stack.removeLast() }
    override func visit(_ node: ActorDeclSyntax) -> SyntaxVisitorContinueKind { enter(node.name.text); return .visitChildren }
    override func visitPost(_ node: ActorDeclSyntax) { stack.removeLast() }
    override func visit(_ node: ProtocolDeclSyntax) -> SyntaxVisitorContinueKind { enter(node.name.text); return .visitChildren }
    override func visitPost(_ node: ProtocolDeclSyntax) { stack.removeLast() }

    override func visit(_ node: ExtensionDeclSyntax) -> SyntaxVisitorContinueKind {
        let name = node.extendedType.trimmedDescription.split(separator: ".").last.map(String.init) ?? ""
        stack.append(name)
        return .visitChildren
    }

    override func visitPost(_ node: ExtensionDeclSyntax) { stack.removeLast() }

    private func parameters(_ clause: FunctionParameterClauseSyntax) -> [Parameter] {
        clause.parameters.map { parameter in
            let label = parameter.firstName.tokenKind == .wildcard ? nil : parameter.firstName.text
            let type = parameter.type.trimmedDescription
            return Parameter(label: label, hasDefault: parameter.defaultValue != nil, isClosure: type.contains("->"))
        }
    }

    override func visit(_ node: FunctionDeclSyntax) -> SyntaxVisitorContinueKind {
        guard let owner = stack.last else { return .skipChildren }
        members[owner, default: []].insert(node.name.text)
        functions["\(owner).\(node.name.text)", default: []].append(parameters(node.signature.parameterClause))
        return .skipChildren
    }

    override func visit(_ node: InitializerDeclSyntax) -> SyntaxVisitorContinueKind {
        guard let owner = stack.last else { return .skipChildren }
        functions["\(owner).init", default: []].append(parameters(node.signature.parameterClause))
        return .skipChildren
    }

    override func visit(_ node: VariableDeclSyntax) -> SyntaxVisitorContinueKind {
        guard let owner = stack.last else { return .skipChildren }
        for binding in node.bindings {
            if let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text { members[owner, default: []].insert(name) }
        }
        return .skipChildren
    }

    override func visit(_ node: EnumCaseElementSyntax) -> SyntaxVisitorContinueKind {
        if let owner = stack.last { members[owner, default: []].insert(node.name.text) }
        return .skipChildren
    }

    override func visit(_ node: TypeAliasDeclSyntax) -> SyntaxVisitorContinueKind {
        if let owner = stack.last { members[owner, default: []].insert(node.name.text) }
        return .skipChildren
    }

    /// Whether a call's labels fit a parameter list: each parameter takes the next label if it
    /// matches, else it must have a default (trailing closures fill closure parameters).
    static func fits(_ labels: [String?], trailingClosures: Int, _ parameters: [Parameter]) -> Bool {
        var index = 0
        var closures = trailingClosures
        for parameter in parameters {
            if index < labels.count, labels[index] == parameter.label {
                index += 1
            } else if index == labels.count, closures > 0, parameter.isClosure {
                closures -= 1
            } else if !parameter.hasDefault {
                return false
            }
        }
        return index == labels.count && closures == 0
    }
}

/// The properties and parameters declared with an SDK type (`let model: ChatModel`,
/// `@Bindable var session: ChatSession`, `item: ChatPresentation.ListRowItem`); a name declared
/// with two different types is left out.
enum VariableTypes {
    final class Collector: SyntaxVisitor {
        let sdk: Declarations
        var found: [String: Set<String>] = [:]

        init(sdk: Declarations) {
            self.sdk = sdk
            super.init(viewMode: .sourceAccurate)
        }

        func type(of annotation: TypeSyntax) -> String? {
            let text = annotation.trimmedDescription
            // An optional's members are Optional's (map, flatMap); `x?.y` is not checked.
            if text.hasSuffix("?") || text.hasSuffix("!") { return nil }
            let last = text.split(separator: ".").last.map(String.init) ?? text
            return sdk.types.contains(last) && (sdk.topLevel.contains(last) || text.contains(".")) ? last : nil
        }

        override func visit(_ node: PatternBindingSyntax) -> SyntaxVisitorContinueKind {
            if let name = node.pattern.as(IdentifierPatternSyntax.self)?.identifier.text,
               let annotation = node.typeAnnotation?.type, let type = type(of: annotation) {
                found[name, default: []].insert(type)
            }
            return .visitChildren
        }

        override func visit(_ node: FunctionParameterSyntax) -> SyntaxVisitorContinueKind {
            let name = (node.secondName ?? node.firstName).text
            if let type = type(of: node.type) { found[name, default: []].insert(type) }
            return .visitChildren
        }
    }

    static func of(_ tree: some SyntaxProtocol, sdk: Declarations) -> [String: String] {
        let collector = Collector(sdk: sdk)
        collector.walk(tree)
        return collector.found.compactMapValues { $0.count == 1 ? $0.first : nil }
    }
}

/// Checks `Type.member` and `Type(...)` / `Type.function(...)` uses against ``Declarations``,
/// for the SDK's own types (SwiftUI's and Foundation's are left to the compiler on a Mac).
final class Uses: SyntaxVisitor {
    let sdk: Declarations
    /// Properties and parameters of an SDK type, by name (`model` → `ChatModel`).
    let variables: [String: String]
    var problems: [String] = []
    var checked = 0

    init(viewMode: SyntaxTreeViewMode, sdk: Declarations, variables: [String: String] = [:]) {
        self.sdk = sdk
        self.variables = variables
        super.init(viewMode: viewMode)
    }

    /// The SDK type an expression names (`ChatPresentation`, `ChatPresentation.StatusMark`), or
    /// the type of a property or parameter declared with one (`model`, `self.model`).
    private func sdkType(_ expression: ExprSyntax) -> String? {
        if let reference = expression.as(DeclReferenceExprSyntax.self) {
            let name = reference.baseName.text
            return sdk.topLevel.contains(name) ? name : variables[name]
        }
        if let access = expression.as(MemberAccessExprSyntax.self), access.base?.as(DeclReferenceExprSyntax.self)?.baseName.tokenKind == .keyword(.self) {
            return variables[access.declName.baseName.text]
        }
        if let access = expression.as(MemberAccessExprSyntax.self), let base = access.base, let outer = sdkType(base) {
            let name = access.declName.baseName.text
            return sdk.members[outer]?.contains(name) == true && sdk.types.contains(name) ? name : nil
        }
        return nil
    }

    override func visit(_ node: MemberAccessExprSyntax) -> SyntaxVisitorContinueKind {
        guard let base = node.base, let type = sdkType(base) else { return .visitChildren }
        let name = node.declName.baseName.text
        checked += 1
        if !["init", "self", "Type"].contains(name), sdk.members[type]?.contains(name) != true {
            problems.append("\(type) has no member \(name) (\(node.trimmedDescription))")
        }
        return .visitChildren
    }

    override func visit(_ node: FunctionCallExprSyntax) -> SyntaxVisitorContinueKind {
        let labels = node.arguments.map { $0.label?.text }
        let trailing = (node.trailingClosure == nil ? 0 : 1) + node.additionalTrailingClosures.count
        var key: String?
        if let type = sdkType(node.calledExpression) {
            key = "\(type).init"
        } else if let access = node.calledExpression.as(MemberAccessExprSyntax.self), let base = access.base, let type = sdkType(base) {
            key = "\(type).\(access.declName.baseName.text)"
        }
        guard let key else { return .visitChildren }
        checked += 1
        // None: a memberwise initializer, or a missing member (the member check reports it).
        guard let overloads = sdk.functions[key] else { return .visitChildren }
        if !overloads.contains(where: { Declarations.fits(labels, trailingClosures: trailing, $0) }) {
            problems.append("\(key) takes no (\(labels.map { ($0 ?? "_") + ":" }.joined())) (\(node.trimmedDescription.prefix(80)))")
        }
        return .visitChildren
    }
}
