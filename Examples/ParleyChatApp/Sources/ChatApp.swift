import ParleyUI
import SwiftUI

@main
struct ChatApp: App {
    var body: some Scene {
        WindowGroup {
            // Sign-in, the conversation list and the chats, against your Parley server.
            ParleyChat(server: "http://127.0.0.1:8080")
        }
    }
}
