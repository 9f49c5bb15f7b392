import Foundation
import ParleyClient
import ParleyProtocol
import Testing

/// Team chat presentation rules, shared by the terminal client and SwiftUI.
@Suite struct TeamPresentationTests {
    let ada = EntityID(), bob = EntityID(), adam = EntityID(), me = EntityID()
    var names: [EntityID: String] { [ada: "Ada Lovelace", bob: "Bob", adam: "Adam Smith", me: "Me Myself"] }

    @Test(arguments: [
        ("Hi @ad", "ad"), ("@", ""), ("Hi @", ""), ("mail me@x.io", nil), ("@ada lovelace", nil), ("no mention", nil), ("@Bob", "bob"),
    ] as [(String, String?)])
    func theMentionBeingTypedIsTheLastWordAfterAnAt(text: String, query: String?) {
        #expect(ChatPresentation.mentionQuery(in: text) == query)
    }

    @Test func candidatesMatchAnyWordOfANameAndLeaveOutMe() {
        let all = [ada, bob, adam, me]
        let names = self.names
        #expect(ChatPresentation.mentionCandidates("ad", participants: all, me: me) { names[$0] }.map(\.name) == ["Ada Lovelace", "Adam Smith"])
        #expect(ChatPresentation.mentionCandidates("smi", participants: all, me: me) { names[$0] }.map(\.id) == [adam])
        #expect(ChatPresentation.mentionCandidates("", participants: all, me: me) { names[$0] }.count == 3)
        #expect(ChatPresentation.mentionCandidates("me", participants: all, me: me) { names[$0] }.isEmpty)
    }

    @Test func completingReplacesTheTypedWord() {
        #expect(ChatPresentation.completingMention("Hi @ad", with: "Ada Lovelace") == "Hi @Ada Lovelace ")
        #expect(ChatPresentation.completingMention("no at here", with: "Bob") == "no at here")
    }

    @Test func mentionsAreFullNamesAfterAnAtLongestFirst() {
        let all = [ada, bob, adam]
        let names = self.names
        let found = ChatPresentation.mentions(in: "@Ada Lovelace and @bob, not bob@x.io or @Bobby", participants: all) { names[$0] }
        #expect(found == [ada, bob])
        #expect(ChatPresentation.mentions(in: "@adam smith!", participants: all) { names[$0] } == [adam])
    }

    @Test func threadLinesAndPreviewCards() {
        let calendar = Calendar(identifier: .gregorian)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(ChatPresentation.threadLine(ThreadSummary(replyCount: 1, lastReplyAt: now, lastReplySeq: 3), now: now, calendar: calendar)
            == "1 reply · \(ChatPresentation.time(now, calendar: calendar))")
        #expect(ChatPresentation.threadLine(
            ThreadSummary(replyCount: 4, lastReplyAt: now.addingTimeInterval(-86_400), lastReplySeq: 9), now: now, calendar: calendar)
            == "4 replies · Yesterday")
        let card = ChatPresentation.PreviewCard(LinkPreview(url: "https://example.com/a", title: "Notes", imageUrl: "https://example.com/i.png"))
        #expect(card?.title == "Notes" && card?.site == "example.com" && card?.imageURL == "https://example.com/i.png")
        #expect(ChatPresentation.PreviewCard(LinkPreview(url: "https://example.com/a")) == nil)
    }
}
