import Foundation
@testable import ParleyClient
import ParleyProtocol
@testable import ParleyTerminal
import ParleyTestSupport
import Testing

/// The texts the terminal and SwiftUI share, in the person's language: the banner, the
/// timeline's lines, typing, system lines and statuses come from the String Catalog, in
/// English and French, with placeholders a name can never fill twice.
@Suite struct LanguagePresentationTests {
    static let french = Locale(identifier: "fr_FR")
    let me = EntityID(), ada = EntityID(), bob = EntityID()

    func names(_ id: EntityID) -> String? { [ada: "Ada", bob: "Bob"][id] }

    @Test func everyTextHasEnglishAndFrench() {
        let catalog = ParleyStrings.Catalog.load()
        let english = Set(catalog.texts["en"]?.keys ?? [:].keys), french = Set(catalog.texts["fr"]?.keys ?? [:].keys)
        #expect(english.count >= 60)
        #expect(english == french, "missing in French: \(english.subtracting(french)); in English: \(french.subtracting(english))")
        // A placeholder in one language is in the other.
        for key in english {
            let braces = { (text: String) in Set(text.split(separator: "{").dropFirst().map { $0.prefix { $0 != "}" } }) }
            #expect(braces(catalog.texts["en"]![key]!) == braces(catalog.texts["fr"]![key]!), "\(key)")
        }
    }

    @Test func theSharedTextsReadInFrench() {
        ParleyStrings.$scoped.withValue(Self.french) {
            #expect(ChatPresentation.banner(.disconnected, outboxCount: 2) == "Hors ligne · 2 en attente d’envoi")
            #expect(ChatPresentation.banner(.connected, syncing: true, outboxCount: 1) == "Synchronisation… · envoi de 1")
            #expect(ChatPresentation.banner(.reconnecting(attempt: 2, retryIn: .seconds(3.2))) == "Hors ligne · reconnexion dans 4 s")
            #expect(ChatPresentation.typingLine(["Ada", "Bob"]) == "Ada et Bob écrivent…")
            #expect(ChatPresentation.typingLine(["Ada", "Bob", "Carol", "Dan"]) == "Ada, Bob et 2 autres écrivent…")
            let renamed = ["action": "renamed", "name": "Lancement"]
            #expect(ChatPresentation.systemLine("", metadata: renamed, by: me, me: me, names: names) == "Vous avez renommé le groupe en « Lancement »")
            #expect(ChatPresentation.systemLine("", metadata: renamed, by: ada, me: me, names: names) == "Ada a renommé le groupe en « Lancement »")
            let added = ["action": "participants.added", "userIds": "\(bob),\(me)"]
            #expect(ChatPresentation.systemLine("", metadata: added, by: ada, me: me, names: names) == "Ada a ajouté Bob et vous")
            #expect(ChatPresentation.StatusMark.read.label == "lu")
            #expect(ChatPresentation.jumpToNewest(newBelow: 3) == "↓ 3 nouveaux")
            #expect(ChatPresentation.emptyListText(isLoading: true) == "Chargement des conversations…")
            let group = Conversation(
                id: EntityID(), type: .group, name: "Lancement", participantIds: [me, ada, bob], createdAt: Date(), lastActivityAt: Date(),
                lastSeq: 0, unreadCount: 0, readSeq: 0, members: [])
            #expect(ChatPresentation.subtitle(group, me: me, users: [:]) == "3 membres")
        }
        // Outside the scope, the process's language is as it was.
        #expect(ChatPresentation.banner(.disconnected) == "Offline")
        #expect(ChatPresentation.typingLine(["Ada"]) == "Ada is typing…")
    }

    /// Someone named "{name}" or "{people}" is written as named: the placeholders are filled once.
    @Test func aNameThatLooksLikeAPlaceholderStaysAsTyped() {
        let odd = EntityID()
        let named = { (id: EntityID) in id == odd ? "{name}" : self.names(id) }
        let renamed = ["action": "renamed", "name": "{who}"]
        #expect(ChatPresentation.systemLine("", metadata: renamed, by: odd, me: me, names: named) == "{name} renamed the group to “{who}”")
        #expect(ChatPresentation.typingLine(["{second}", "Bob"]) == "{second} and Bob are typing…")
        #expect(ParleyStrings.fill("{a} {b} {c", ["a": "{b}", "b": "2"]) == "{b} 2 {c")
    }

    @Test(arguments: [
        (["LANG": "fr_FR.UTF-8"], "fr_FR"), (["LANG": "fr_FR.UTF-8", "LC_MESSAGES": "en_GB.UTF-8"], "en_GB"),
        (["LC_ALL": "de_DE.UTF-8", "LC_MESSAGES": "fr_FR"], "de_DE"), (["LANG": "C.UTF-8"], nil), ([:], nil),
        (["LC_TIME": "fr_FR.UTF-8"], nil),
    ] as [([String: String], String?)])
    func theTerminalTakesItsLanguageFromTheEnvironment(environment: [String: String], language: String?) {
        #expect(TerminalChat.localLanguage(environment: environment)?.identifier == language)
    }
}
