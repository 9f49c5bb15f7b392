import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The web client meets a server restored from a backup: the tab had a message the backup does
/// not hold, and the restored server gives its seq to another message. The tab sees the new
/// store identity in `hello`, forgets what it held and shows exactly the restored server's chat.
@Suite(.serialized, .needs("chromium")) struct WebRestoreEndToEndTests {
    typealias Web = WebClientEndToEndTests

    @Test(.heavy) func aTabAheadOfTheBackupShowsTheRestoredServer() async throws {
        let live = TestServer.temporaryDirectory() + "/live"
        var server = try ServeProcess(name: "web-restore", dataDirectory: live)
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let browser = try await Chromium.launch()
        do {
            let (carol, ada, adaId) = try await Web.carolAndAda(url, browser)
            let direct = try await carol.createConversation(.init(type: .direct, participantIds: [adaId]))
            _ = try await carol.send(.init(clientMessageId: "b1", text: "before the backup"), to: direct.id)
            try await ada.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
            try await ada.waitFor("\(Web.messages("before the backup")).length === 1")

            let backup = TestServer.temporaryDirectory() + "/backup"
            let taken = try await runToEndOffPool(ServeProcess.binary, ["backup", "--data-dir", live, "--to", backup])
            #expect(taken.status == 0, "\(taken.output)")
            let lost = try await carol.send(.init(clientMessageId: "a1", text: "after the backup"), to: direct.id)
            try await ada.waitFor("\(Web.messages("after the backup")).length === 1")
            server.stop()
            let restoredDirectory = TestServer.temporaryDirectory() + "/restored"
            let restore = try await runToEndOffPool(ServeProcess.binary, ["restore", "--from", backup, "--data-dir", restoredDirectory])
            #expect(restore.status == 0, "\(restore.output)")
            server = try ServeProcess(name: "web-restore", dataDirectory: restoredDirectory, port: url.port)
            try await server.waitUntilReady()

            // The restored server gives the lost message's seq to the next one.
            let next = try await carol.send(.init(clientMessageId: "r1", text: "after the restore"), to: direct.id)
            #expect(next.seq == lost.seq)
            try await ada.waitFor(
                "\(Web.messages("after the restore")).length === 1 && \(Web.messages("after the backup")).length === 0"
                    + " && \(Web.messages("before the backup")).length === 1 && document.querySelector('#banner').dataset.state === 'online'",
                "the tab shows the restored chat", timeout: .seconds(40))
            #expect(try await ada.eval("document.querySelectorAll('#messages [data-seq]').length") as? Int == 2)
            // What is on screen is read again on the restored server: the badge clears.
            let row = "document.querySelector('#conversation-list [data-conversation-id=\"\(direct.id)\"]')"
            try await ada.waitFor("!\(row).classList.contains('has-unread')", "the open chat read on the restored server", timeout: .seconds(20))
            #expect(try await carol.conversation(direct.id).members.first { $0.userId == adaId }?.readSeq == next.seq)
            try await ada.screenshot(Web.screens + "/web-after-restore.png")
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }
}
