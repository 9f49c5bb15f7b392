import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The web client opens from what it knew, as the SDK does: the conversation list, the people
/// and each loaded chat's latest messages kept in IndexedDB. Reloaded with every request to the
/// API refused (DevTools blocks `/api/`, the WebSocket included), the tab still shows the list
/// and the chat; let through again, it catches up what was sent meanwhile, each message once.
/// Signing out deletes what it kept.
@Suite(.serialized, .needs("chromium")) struct WebCacheEndToEndTests {
    typealias Web = WebClientEndToEndTests

    /// The records the tab keeps in its cache (a JS promise of a number).
    static let cachedRecords = """
        new Promise((resolve, reject) => { const r = indexedDB.open('parley'); r.onerror = () => reject(r.error);
          r.onsuccess = () => { const q = r.result.transaction('cache').objectStore('cache').count();
            q.onsuccess = () => { resolve(q.result); r.result.close(); }; q.onerror = () => reject(q.error); }; })
        """

    /// The keys of the records the tab keeps (a JS promise of an array).
    static let cachedKeys = """
        new Promise((resolve, reject) => { const r = indexedDB.open('parley'); r.onerror = () => reject(r.error);
          r.onsuccess = () => { const q = r.result.transaction('cache').objectStore('cache').getAllKeys();
            q.onsuccess = () => { resolve(q.result); r.result.close(); }; q.onerror = () => reject(q.error); }; })
        """

    /// Empties the tab's cache (a JS promise), as a new device would start.
    static let emptyCache = """
        new Promise((resolve, reject) => { const r = indexedDB.open('parley'); r.onerror = () => reject(r.error);
          r.onsuccess = () => { const t = r.result.transaction('cache', 'readwrite'); t.objectStore('cache').clear();
            t.oncomplete = () => { resolve(true); r.result.close(); }; t.onerror = () => reject(t.error); }; })
        """

    @Test(.heavy) func aReloadWithoutTheServerShowsTheListAndTheChatThenCatchesUpOnce() async throws {
        try await Web.withServerAndBrowser("web-cache") { url, browser in
            let (carol, ada, adaId) = try await Web.carolAndAda(url, browser)
            let direct = try await carol.createConversation(.init(type: .direct, participantIds: [adaId]))
            for (n, text) in ["first words", "second thoughts", "third time"].enumerated() {
                _ = try await carol.send(.init(clientMessageId: "c\(n)", text: text), to: direct.id)
            }
            let row = "#conversation-list [data-conversation-id=\"\(direct.id)\"]"
            try await ada.click(row)
            try await ada.waitFor("\(Web.messages("third time")).length === 1")
            // Written a little after it changed: the list and the chat.
            try await ada.waitFor("\(Self.cachedKeys).then(k => k.some(key => key.endsWith('|c|\(direct.id)')))", "the chat cached")

            // Nothing of the API answers now, not even the WebSocket; the page itself still loads.
            _ = try await ada.call("Network.enable")
            _ = try await ada.call("Network.setBlockedURLs", ["urls": ["*/api/*"]])
            #expect(try await ada.eval("fetch('/api/v1/health').then(r => 'answered', e => 'refused')") as? String == "refused")
            // A reload (the address keeps the open chat, #c=ID): a new document, its state only what the cache gives.
            #expect(try await ada.eval("location.hash") as? String == "#c=\(direct.id)")
            try await ada.eval("window.beforeReload = true")
            _ = try await ada.call("Page.reload")
            try await ada.waitFor("window.beforeReload === undefined && document.readyState === 'complete'", "the reload")
            try await ada.waitFor("document.body.dataset.screen === 'main'")
            try await ada.waitFor(
                "\(Web.messages("first words")).length === 1 && \(Web.messages("third time")).length === 1",
                "the chat from the cache", timeout: .seconds(10))
            try await ada.waitFor("!!document.querySelector(\(BrowserPage.literal(row)))", "the list from the cache")
            #expect(try await ada.eval("document.querySelector('#banner').dataset.state") as? String != "online")
            #expect(try await ada.eval("document.querySelector('#chat-title')?.textContent ?? ''") as? String == "Carol")
            try await ada.screenshot(Web.screens + "/web-offline-from-cache.png")

            // Sent while the tab could not hear; then the network comes back.
            _ = try await carol.send(.init(clientMessageId: "c3", text: "while you were away"), to: direct.id)
            _ = try await ada.call("Network.setBlockedURLs", ["urls": [String]()])
            try await ada.waitFor(
                "\(Web.messages("while you were away")).length === 1 && document.querySelector('#banner').dataset.state === 'online'",
                "caught up", timeout: .seconds(40))
            for text in ["first words", "second thoughts", "third time", "while you were away"] {
                #expect(try await ada.eval("\(Web.messages(text)).length") as? Int == 1, "\(text) once")
            }
            let seqs = try await ada.eval("[...document.querySelectorAll('#messages [data-seq]')].map(e => +e.dataset.seq)") as? [Int]
            #expect(seqs == seqs?.sorted() && Set(seqs ?? []).count == seqs?.count, "\(String(describing: seqs))")

            // Signing out takes the saved copy with it.
            try await ada.click("#logout")
            try await ada.waitFor("document.body.dataset.screen === 'auth'")
            try await ada.waitFor("\(Self.cachedRecords).then(n => n === 0)", "the cache deleted at sign-out")
            #expect(ada.problems.isEmpty, "\(ada.problems)")
        }
    }

    /// One record a conversation, a person and a chat: a message in one chat rewrites that
    /// chat's records and the list's state, not every conversation and person the tab knows.
    @Test(.heavy) func aMessageRewritesItsOwnRecordsOnly() async throws {
        try await Web.withServerAndBrowser("web-cache-records") { url, browser in
            let (carol, ada, adaId) = try await Web.carolAndAda(url, browser)
            for n in 1...8 {
                _ = try await carol.createConversation(.init(type: .group, participantIds: [adaId], name: "Team \(n)"))
            }
            let direct = try await carol.createConversation(.init(type: .direct, participantIds: [adaId]))
            _ = try await carol.send(.init(clientMessageId: "c0", text: "first"), to: direct.id)
            try await ada.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
            try await ada.waitFor("\(Web.messages("first")).length === 1")
            try await ada.waitFor("\(Self.cachedKeys).then(k => k.filter(key => key.includes('|v|')).length === 9 && k.some(key => key.endsWith('|c|\(direct.id)')))", "nine conversations and the chat cached")
            #expect(try await ada.eval("\(Self.cachedKeys).then(k => k.every(key => key.startsWith('\(adaId)|')))") as? Bool == true)
            // Settled: nothing more to write.
            try await ada.waitFor(
                "new Promise(r => { const a = window.parleyDebug.cacheWrites(); setTimeout(() => r(window.parleyDebug.cacheWrites() === a), 700); })",
                "the writes settle")
            let before = try await ada.eval("window.parleyDebug.cacheWrites()") as? Int ?? 0
            _ = try await carol.send(.init(clientMessageId: "c1", text: "second"), to: direct.id)
            try await ada.waitFor("\(Web.messages("second")).length === 1")
            try await ada.waitFor("new Promise(r => setTimeout(() => r(true), 700))", "past the save delay")
            let after = try await ada.eval("window.parleyDebug.cacheWrites()") as? Int ?? 0
            // The state record, the conversation and its messages (receipts may add a write or two
            // of the same records): far fewer than the nine conversations and two people.
            #expect(after - before >= 2 && after - before <= 6, "\(after - before) records written for one message")
            #expect(ada.problems.isEmpty, "\(ada.problems)")
        }
    }
}
