#if canImport(SwiftUI)
import ParleyClient
import SwiftUI

/// A message's link preview as ``ChatPresentation/PreviewCard`` says it: the site, the
/// title and the description, plain texts the server already cut, behind a bar on the leading
/// edge. A tap opens the page when its address is http(s); anything else stays inert text.
///
/// The page's image (``ChatPresentation/PreviewCard/imageURL``) is left out on purpose. The
/// media cache loads attachments by id with the user's token and has no entry point for another
/// site's address, and loading it straight from that site (AsyncImage) would tell every site
/// someone linked who read the message and when. The web client leaves it out for the same reason.
struct LinkPreviewCard: View {
    let card: ChatPresentation.PreviewCard
    @Environment(\.openURL) private var openURL

    /// The page's address, only when it is a web address (never `javascript:`, `file:` or an app's scheme).
    private var link: URL? {
        guard let url = URL(string: card.url), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return nil
        }
        return url
    }

    var body: some View {
        if let link {
            Button {
                openURL(link)
            } label: {
                content
            }
            .buttonStyle(.plain)
            .accessibilityHint(tr("Opens the page"))
        } else {
            content
        }
    }

    private var content: some View {
        VStack(alignment: .leading, spacing: 2) {
            Text(card.site)
                .font(.caption2)
                .foregroundStyle(.secondary)
                .lineLimit(1)
            Text(card.title)
                .font(.subheadline.bold())
                .lineLimit(2)
                .multilineTextAlignment(.leading)
            if let description = card.description {
                Text(description)
                    .font(.caption)
                    .lineLimit(3)
                    .multilineTextAlignment(.leading)
            }
        }
        .padding(.leading, 10)
        .padding(.vertical, 2)
        .frame(maxWidth: 280, alignment: .leading)
        .overlay(alignment: .leading) {
            // In an overlay the bar takes the card's height (in a stack it would take its own).
            Capsule().fill(.secondary).frame(width: 3)
        }
        .accessibilityElement(children: .combine)
    }
}
#endif
