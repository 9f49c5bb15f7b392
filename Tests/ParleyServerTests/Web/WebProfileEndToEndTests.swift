import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Names and pictures in the web client, in headless Chromium against `parley serve`: Ada
/// opens her profile from her name in the sidebar, renames herself and chooses a picture;
/// Carol (over the API) sees both. Carol's own picture shows beside her messages in a group
/// and in the member list; her new name, markup included, arrives through `user.updated` and
/// stays text. Screenshots go to `.build/test-screens/`.
@Suite(.serialized, .needs("chromium")) struct WebProfileEndToEndTests {
    typealias Web = WebClientEndToEndTests

    static let hostile = "<img src=x onerror=alert(1)>"

    /// A picture that loaded (a blob, decoded) inside the element `selector` finds.
    static func pictured(_ selector: String) -> String {
        "[...document.querySelectorAll(\(BrowserPage.literal(selector + " img.avatar-img")))].some(i => i.src.startsWith('blob:') && i.complete && i.naturalWidth > 0)"
    }

    @Test(.heavy) func aNameAndAPictureChangeEverywhere() async throws {
        try await Web.withServerAndBrowser("web-profile") { url, browser in
            let (carol, ada, adaId) = try await Web.carolAndAda(url, browser)
            let carolId = try await carol.me().id
            // Portraits drawn for the occasion: a face on a coloured ground.
            let painter = try await browser.newPage("portrait", width: 240, height: 240)
            let carolPicture = try await Self.portrait(painter, skin: "#8d5524", ground: "#ffcc80", "carol")
            let picture = try await Self.portrait(painter, skin: "#f4c29b", ground: "#c5cae9", "ada")
            let upload = try await carol.upload(file: URL(fileURLWithPath: carolPicture), name: "carol.png", contentType: "image/png")
            _ = try await carol.updateProfile(.init(avatar: .set(upload.id)))
            let group = try await carol.createConversation(.init(type: .group, participantIds: [adaId], name: "Studio"))
            let hello = try await carol.send(.init(clientMessageId: "c1", text: "Welcome to the studio"), to: group.id)
            let message = "#messages [data-message-id=\"\(hello.id)\"]"

            // Carol's picture beside her message and in the member list.
            try await ada.click("#conversation-list [data-conversation-id=\"\(group.id)\"]")
            try await ada.waitFor(Self.pictured(message + " .sender-line"), "Carol's picture beside her message")
            try await ada.click("#group-open")
            try await ada.waitFor(Self.pictured("#group-members [data-user-id=\"\(carolId)\"]"), "Carol's picture among the members")
            #expect(try await ada.eval("document.querySelector('#group-members [data-user-id=\"\(adaId)\"] .avatar .initials').textContent") as? String == "A")
            try await ada.press("Escape")

            // Ada renames herself from her profile.
            try await ada.click("#me-open")
            try await ada.waitFor("!document.querySelector('#account-panel').hidden", "the profile")
            #expect(try await ada.eval("document.querySelector('#profile-name').value") as? String == "Ada")
            #expect(try await ada.eval("document.querySelector('#profile-picture-remove').hidden") as? Bool == true, "nothing to remove yet")
            try await ada.fill("#profile-name", "   ")
            try await ada.click("#profile-save")
            try await ada.waitFor("document.querySelector('#profile-status').textContent === 'Type a name.'")
            try await ada.fill("#profile-name", "Ada Lovelace")
            try await ada.click("#profile-save")
            try await ada.waitFor("document.querySelector('#profile-status').textContent === 'Name saved.'", "saved")
            try await ada.waitFor("document.querySelector('#me-name').textContent === 'Ada Lovelace'", "the sidebar's name")
            #expect(try await carol.users().first { $0.id == adaId }?.displayName == "Ada Lovelace")

            // A file that is not an image is refused before it goes; a picture is taken.
            let notes = try Self.write(Data("notes\n".utf8), "notes.txt")
            try await ada.setFiles("#profile-picture-input", [notes])
            try await ada.waitFor("document.querySelector('#profile-status').textContent.startsWith('Choose a PNG')", "refused")
            try await ada.setFiles("#profile-picture-input", [picture])
            try await ada.waitFor("document.querySelector('#profile-status').textContent === 'Picture saved.'", "saved", timeout: .seconds(30))
            try await ada.waitFor(Self.pictured("#profile-avatar") + " && " + Self.pictured("#me-avatar"), "her picture in the profile and the sidebar")
            #expect(try await ada.eval("document.querySelector('#profile-picture-remove').hidden") as? Bool == false)
            let seen = try #require(try await carol.users().first { $0.id == adaId })
            #expect(seen.avatarUrl != nil)
            #expect(try await carol.download(try #require(seen.avatarUrl)).count > 1_000, "Carol may download it")
            try await ada.screenshot(Web.screens + "/web-profile.png")
            try await ada.click("#account-close")

            // Carol renames herself to markup: it arrives at once, and stays text.
            _ = try await carol.updateProfile(.init(displayName: Self.hostile))
            try await ada.waitFor("document.querySelector(\(BrowserPage.literal(message + " .sender")))?.textContent === \(BrowserPage.literal(Self.hostile))",
                                  "Carol's new name beside her message")
            #expect(try await ada.eval("document.querySelectorAll('img:not(.attachment-image):not(#viewer-image):not(.avatar-img):not([src=\"/web/favicon.svg\"])').length") as? Int == 0)
            try await ada.screenshot(Web.screens + "/web-profile-chat.png")

            // Ada takes her picture away: initials again.
            try await ada.click("#me-open")
            try await ada.click("#profile-picture-remove")
            try await ada.waitFor("document.querySelector('#profile-status').textContent === 'Picture removed.'")
            try await ada.waitFor("!document.querySelector('#me-avatar .avatar').classList.contains('pictured')", "initials in the sidebar")
            #expect(try await carol.users().first { $0.id == adaId }?.avatarUrl == nil)
            #expect(ada.problems.isEmpty, "\(ada.problems)")
        }
    }

    /// A head and shoulders on a ground, as a PNG file.
    static func portrait(_ painter: BrowserPage, skin: String, ground: String, _ name: String) async throws -> String {
        let path = Web.screens + "/web-portrait-\(name).png"
        try await painter.goto("data:text/html," + ("<body style='margin:0;height:100vh;background:"
            + "radial-gradient(circle at 50% 38%, \(skin) 0 21%, transparent 22%),"
            + "radial-gradient(ellipse at 50% 105%, #5c6bc0 0 48%, transparent 49%), \(ground)'>")
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        try await painter.screenshot(path)
        return path
    }

    static func write(_ data: Data, _ name: String) throws -> String {
        let path = TestServer.temporaryDirectory() + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }
}
