#if canImport(SwiftUI)
import ParleyClient
import SwiftUI

/// "Offline · reconnecting in 4 s", "Connecting…": nothing while connected. A failed
/// connection offers to try again.
public struct ConnectionBanner: View {
    /// The connection's state.
    public let state: ConnectionState
    /// A sync is catching up.
    public let syncing: Bool
    /// Messages waiting in the outbox.
    public let outboxCount: Int
    /// Called by the "Try again" button of a failed connection.
    public let retry: (() -> Void)?

    /// A banner for a state.
    public init(state: ConnectionState, syncing: Bool = false, outboxCount: Int = 0, retry: (() -> Void)? = nil) {
        self.state = state
        self.syncing = syncing
        self.outboxCount = outboxCount
        self.retry = retry
    }

    /// The banner, or nothing.
    public var body: some View {
        if let text = ChatPresentation.banner(state, syncing: syncing, outboxCount: outboxCount) {
            HStack(spacing: 8) {
                if state == .connecting || state == .connected {
                    ProgressView().controlSize(.small)
                } else {
                    Image(systemName: "wifi.slash")
                }
                Text(text)
                    .font(.footnote)
                    .lineLimit(2)
                Spacer(minLength: 0)
                if state == .failed, let retry {
                    Button(tr("Try again"), action: retry)
                        .font(.footnote.bold())
                }
            }
            .padding(.horizontal)
            .padding(.vertical, 6)
            .frame(maxWidth: .infinity)
            .background(.yellow.opacity(0.25))
            .accessibilityElement(children: .combine)
        }
    }
}

#Preview("States") {
    VStack(spacing: 12) {
        ConnectionBanner(state: .connecting)
        ConnectionBanner(state: .reconnecting(attempt: 2, retryIn: .seconds(4)), outboxCount: 3)
        ConnectionBanner(state: .failed, retry: {})
        ConnectionBanner(state: .connected)
    }
}
#endif
