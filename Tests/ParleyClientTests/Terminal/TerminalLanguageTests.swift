import Foundation
import ParleyClient
@testable import ParleyTerminal
import Testing

/// The terminal's own texts (panes, key hints, help, statuses, sign-in) in French as well as
/// English, by the language the SDK's texts follow: every French template fills the placeholders
/// its English one does, every text the sources write has one, the key hints are no wider in
/// French, and a screen drawn in a French task reads French while the process stays English.
@Suite struct TerminalLanguageTests {
    static let french = Locale(identifier: "fr_FR")

    /// The repository's root: this file is Tests/ParleyClientTests/Terminal/TerminalLanguageTests.swift.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The `{name}` placeholders of a template.
    static func placeholders(_ template: String) -> Set<String> {
        Set(template.split(separator: "{", omittingEmptySubsequences: false).dropFirst().map { String($0.prefix { $0 != "}" }) })
    }

    /// The template each `TerminalStrings.text` call of Sources/ParleyTerminal passes (its first
    /// argument, a string literal, unescaped), with the file and line it is on; a literal the
    /// scan cannot take as a plain template (one with an interpolation) is reported as a problem.
    static func templatesInSources() throws -> (templates: [(place: String, template: String)], problems: [String]) {
        let folder = root.appendingPathComponent("Sources/ParleyTerminal")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "swift" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
        let call = try NSRegularExpression(pattern: #"TerminalStrings\.text\(\s*"((?:[^"\\]|\\.)*)""#)
        var templates: [(place: String, template: String)] = []
        var problems: [String] = []
        for file in files {
            let source = try String(contentsOf: file, encoding: .utf8)
            for match in call.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
                guard let range = Range(match.range(at: 1), in: source) else { continue }
                let line = source[..<range.lowerBound].filter { $0 == "\n" }.count + 1
                let place = "\(file.lastPathComponent):\(line)"
                if let template = unescaped(source[range]) {
                    templates.append((place: place, template: template))
                } else {
                    problems.append("\(place): \(source[range])")
                }
            }
        }
        return (templates, problems)
    }

    /// A string literal's text as the program sees it (`\"` → `"`, `\\` → `\`); nil for an
    /// interpolation or an escape a template has no use for.
    static func unescaped(_ literal: Substring) -> String? {
        var out = ""
        var escaping = false
        for character in literal {
            if escaping {
                switch character {
                case "\"", "\\", "'": out.append(character)
                case "n": out.append("\n")
                case "t": out.append("\t")
                default: return nil
                }
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else {
                out.append(character)
            }
        }
        return out
    }

    /// A French template fills exactly the placeholders of its English one (a missing one would
    /// drop a name or a count, an extra one would show "{name}"), is really French (only
    /// "Conversations" is the same word), and writes ’ and « » rather than ' and ".
    @Test func everyFrenchTemplateHasItsEnglishPlaceholders() {
        #expect(TerminalStrings.french.count >= 100, "the table (\(TerminalStrings.french.count) entries)")
        for (english, french) in TerminalStrings.french {
            #expect(Self.placeholders(english) == Self.placeholders(french), "\(english) → \(french)")
            #expect(!french.isEmpty && (french != english || english == "Conversations"), "not translated: \(english)")
            #expect(!french.contains("'") && !french.contains("\""), "typographic quotes in French: \(french)")
        }
    }

    /// Every text the terminal writes through `TerminalStrings.text` has a French template, read
    /// from the sources themselves (a new English status cannot be forgotten), every template is
    /// a plain literal (what people typed goes in as a value), and every French entry is used.
    @Test func everyTextTheTerminalWritesHasAFrenchTemplate() throws {
        let (templates, problems) = try Self.templatesInSources()
        #expect(Set(templates.map { $0.template }).count >= 100, "the scan finds the templates (\(templates.count) calls)")
        #expect(problems.isEmpty, "templates that are not plain literals:\n\(problems.joined(separator: "\n"))")
        let missing = templates.filter { TerminalStrings.french[$0.template] == nil }.map { "\($0.place): \($0.template)" }
        #expect(missing.isEmpty, "no French for:\n\(missing.joined(separator: "\n"))")
        let unused = Set(TerminalStrings.french.keys).subtracting(templates.map { $0.template })
        #expect(unused.isEmpty, "French entries no source uses: \(unused.sorted())")
        // The scan itself: an escaped quote is unescaped, an interpolation is refused.
        #expect(Self.unescaped(#"No conversation matches \"{text}\""#) == "No conversation matches \"{text}\"")
        #expect(Self.unescaped(#"Sending \(count) again"#) == nil)
    }

    /// The key hints at the bottom are no wider in French than in English (the status line is
    /// cut at the terminal's width, so a longer hint would lose its last keys sooner).
    @Test(arguments: [ChatScreen.Focus.list, .messages, .input])
    func theKeyHintsAreNoWiderInFrench(focus: ChatScreen.Focus) throws {
        var screen = ChatScreen()
        screen.focus = focus
        let hint = { (locale: Locale) -> String? in
            ParleyStrings.$scoped.withValue(locale) {
                screen.render(width: 200, height: 10).last.map { ChatScreen.stripStyles($0).trimmingCharacters(in: .whitespaces) }
            }
        }
        let english = try #require(hint(Locale(identifier: "en_US")))
        let french = try #require(hint(Self.french))
        #expect(french != english, "\(focus) hint not translated")
        #expect(TerminalText.width(french) <= TerminalText.width(english), "\(french) is wider than \(english)")
    }

    /// A screen drawn in a French task reads French (the connection, the empty list, the chat
    /// pane's invitation, the key hints), commands as typed; after the task, the same screen
    /// reads English again.
    @Test func aScreenReadsInTheLanguageOfItsTask() {
        var screen = ChatScreen()
        screen.account = "Ada"
        let draw = { (screen: ChatScreen) -> [String] in screen.render(width: 100, height: 12).map(ChatScreen.stripStyles) }
        let french = ParleyStrings.$scoped.withValue(Self.french) { draw(screen) }
        #expect(french[0].hasSuffix("● en ligne "))
        #expect(french[1].hasPrefix(" Conversations "))
        #expect(french[2].hasPrefix(" aucune : /dm EMAIL ") && french[2].contains("│  Ouvrez (↑ ↓ Enter) ou créez une conversation :"))
        #expect(french[3].hasPrefix(" ou /group EMAIL,EMAIL… NAME ") && french[3].contains("/group EMAIL,EMAIL… NAME   /help pour tout voir"))
        #expect(french[11].hasPrefix(" Enter envoyer · ↑ ligne vide : messages · Tab liste"))
        screen.focus = .list
        let list = ParleyStrings.$scoped.withValue(Self.french) { draw(screen) }
        #expect(list[11].hasPrefix(" ↑↓ Enter ouvrir · Tab écrire · /help · Ctrl-C quitter"))
        // Outside the task the process's language (English) is as it was.
        screen.focus = .input
        let english = draw(screen)
        #expect(english[0].hasSuffix("● online "))
        #expect(english[2].hasPrefix(" none yet: /dm EMAIL ") && english[2].contains("│  Pick a conversation (↑ ↓ Enter), or start one:"))
        #expect(english[11].hasPrefix(" Enter send · ↑ on empty line: pick a message · Tab list"))
    }

    /// The help in French keeps each command as typed in the first column and explains it in
    /// French from the same column; refusals keep their command, and what a person typed (an
    /// unknown command that looks like a placeholder) stays as typed.
    @Test func helpAndRefusalsKeepTheCommandsAsTyped() {
        let english = ChatCommand.helpLines
        ParleyStrings.$scoped.withValue(Self.french) {
            let french = ChatCommand.helpLines
            #expect(french.count == english.count)
            #expect(french.first == "/dm EMAIL" + String(repeating: " ", count: 21) + "une conversation directe")
            for (en, fr) in zip(english, french) where en.hasPrefix("/") {
                #expect(fr.prefix(30) == en.prefix(30), "the command column: \(fr)")
                #expect(fr.dropFirst(30) != en.dropFirst(30), "the explanation is French: \(fr)")
            }
            #expect(ChatCommand.parse("/dm") == .invalid("/dm attend un e-mail ou un nom"))
            #expect(ChatCommand.parse("/pin x") == .invalid("/pin [N] : N est un numéro de message, 1 = le plus récent"))
            #expect(ChatCommand.parse("/{usage}") == .invalid("Commande inconnue /{usage} : /help les liste toutes"))
            #expect(ChatCommand.parse("/attach") == .invalid("/attach PATH [CAPTION]"))
            #expect(LoginFlow().prompt == "Connexion : (l) se connecter ou (r) créer un compte ?")
        }
        #expect(ChatCommand.parse("/dm") == .invalid("/dm needs an email or a name"))
        #expect(LoginFlow().prompt == "Sign in: (l)og in or (r)egister?")
    }
}
