#if canImport(SwiftUI)
import Foundation
import ParleyClient
import ParleyProtocol
import SwiftUI

/// The whole chat in one view: sign-in (or sign-up) when nobody is signed in, then the
/// conversation list and the chats, with the connection banner, typing, receipts and the
/// offline outbox of the SDK. The session is kept in the Keychain and each user's messages in
/// their own database in the app's caches folder.
///
/// ```swift
/// WindowGroup { ParleyChat(server: "https://chat.example.com") }
/// ```
public struct ParleyChat: View {
    @State private var session: ChatSession?
    private let server: URL?
    private let address: String
    private let signedIn: AuthResponse?

    /// A chat with a server; shows sign-in until someone signs in. An address that is not a
    /// URL shows an error instead of crashing.
    public init(server: String) {
        address = server
        self.server = URL(string: server)
        signedIn = nil
    }

    /// A chat with a server for a user the app has signed in itself.
    public init(server: URL, session: AuthResponse) {
        address = server.absoluteString
        self.server = server
        signedIn = session
    }

    /// A chat with a server; shows sign-in until someone signs in.
    public init(server: URL) {
        address = server.absoluteString
        self.server = server
        signedIn = nil
    }

    /// The navigation for the session's state.
    public var body: some View {
        Group {
            if let session {
                switch session.state {
                case .signedIn:
                    ChatNavigation(session: session)
                case .signedOut, .signingIn:
                    SignInView(session: session)
                }
            } else if server == nil {
                ContentUnavailableView("Can't use this server", systemImage: "exclamationmark.triangle", description: Text(address))
            } else {
                ProgressView()
            }
        }
        .task {
            guard session == nil, let server else { return }
            // Application Support, not Caches: the database holds the outbox (messages written
            // and not yet sent), and iOS empties Caches when it runs short of space.
            let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            let made = ChatSession(
                server: server, store: KeychainSessionStore(server: server),
                databaseDirectory: support?.appendingPathComponent("Parley", isDirectory: true).path)
            session = made
            if let signedIn {
                await made.start(with: signedIn)
            } else {
                await made.resume()
            }
        }
    }
}

/// The list and the open chat: a split view where there is room, a stack on a phone.
struct ChatNavigation: View {
    let session: ChatSession
    @State private var selection: EntityID?

    var body: some View {
        NavigationSplitView {
            ConversationListView(session: session, selection: $selection)
        } detail: {
            if let selection, let model = session.chat(selection) {
                ChatView(model: model, session: session)
                    .id(selection)
            } else {
                ContentUnavailableView("No chat selected", systemImage: "bubble.left.and.bubble.right")
            }
        }
    }
}

#Preview("Signed out") {
    ParleyChat(server: "http://127.0.0.1:8080")
}
#endif
