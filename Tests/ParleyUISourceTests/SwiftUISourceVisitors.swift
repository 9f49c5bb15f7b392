import Foundation
import SwiftParser
import SwiftParserDiagnostics
import SwiftSyntax
import Testing

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
