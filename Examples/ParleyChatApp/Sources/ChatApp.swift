import ParleyUI
import SwiftUI

@main
struct ChatApp: App {
    // Push: the device token, quiet banners for the open chat, taps that open their chat.
    @UIApplicationDelegateAdaptor(ParleyAppDelegate.self) private var appDelegate

    var body: some Scene {
        WindowGroup {
            // Sign-in, the conversation list and the chats, against your Parley server.
            ParleyChat(server: "http://127.0.0.1:8080")
        }
    }
}
