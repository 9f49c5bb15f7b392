// The README's "The SDK in a few lines", as a program CI builds and runs against a live server
// (Tests/ParleyServerTests/Docs/ReadmeSamplesTests.swift checks that the README shows exactly the
// lines between the markers). `swift run SDKQuickStart` with `swift run parley serve` running
// and the users below registered.
// README:begin
import Foundation
import ParleyClient

guard let server = URL(string: ProcessInfo.processInfo.environment["PARLEY_URL"] ?? "http://127.0.0.1:8080")
else { fatalError("PARLEY_URL is not a URL") }
let api = ParleyAPI(baseURL: server)
let auth = try await api.login(.init(organization: "Acme", email: "alice@acme.io", password: "alice-secret"))
let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]  // not Caches:
try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)  // the outbox lives there
let client = try ChatClient(serverURL: server, token: auth.token, userId: auth.user.id,  // one database per user
                            databasePath: support.appendingPathComponent("parley-\(auth.user.id).sqlite").path)
await client.start()                            // connects, reconnects with backoff, catches up

let list = ConversationListModel(client: client)  // @MainActor @Observable: rows, badges, banner
await list.start()                              // the cache at once (a first run: the server's list)
guard let first = list.rows.first else { print("No conversations yet: start one in the web client"); exit(0) }
let chat = ChatModel(client: client, conversationId: first.id)
await chat.start()                              // cached messages at once (first open: from the server)
await chat.send("Hi")                           // on screen at once as .sending; ✓ / ✓✓ / read follow
await chat.userIsTyping()                       // on every keystroke: debounced typing indicator
await chat.messagesBecameVisible(chat.messages) // batched read receipts
print(first.title, chat.messages.map(\.text), chat.typingLine ?? "")
await client.synchronize()                      // a tool that exits now waits for the outbox first
// README:end
