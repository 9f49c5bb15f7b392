#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI

/// A picture of a message, opened full screen from its bubble.
struct ViewedImage: Identifiable {
    /// The attachment's id.
    let id: EntityID
    /// The decoded picture, as the bubble shows it (the attachment's own bytes, not a thumbnail).
    let image: Image
    /// The file name, for the title and the share sheet.
    let name: String
    /// What VoiceOver says of it (``ChatPresentation/MessageItem/attachmentLine``).
    let label: String
}

/// What an image bubble calls when tapped: the chat (or thread) shows the picture full screen.
struct OpenImageAction {
    let open: (ViewedImage) -> Void
    func callAsFunction(_ viewed: ViewedImage) { open(viewed) }
}

private struct OpenImageKey: EnvironmentKey {
    static let defaultValue: OpenImageAction? = nil
}

extension EnvironmentValues {
    /// Opens a picture full screen; nil where no screen shows one (the bubble is not a button).
    var parleyOpenImage: OpenImageAction? {
        get { self[OpenImageKey.self] }
        set { self[OpenImageKey.self] = newValue }
    }
}

extension View {
    /// Image bubbles below this view open full screen: over the whole screen on iOS, in a sheet
    /// on macOS.
    func opensImagesFullScreen(_ shown: Binding<ViewedImage?>) -> some View {
        #if os(iOS)
        environment(\.parleyOpenImage, OpenImageAction { shown.wrappedValue = $0 })
            .fullScreenCover(item: shown) { ImageViewer(viewed: $0) }
        #else
        environment(\.parleyOpenImage, OpenImageAction { shown.wrappedValue = $0 })
            .sheet(item: shown) { ImageViewer(viewed: $0).frame(minWidth: 640, minHeight: 480) }
        #endif
    }
}

/// A picture full screen on black: pinch (or VoiceOver's zoom rotor) to zoom up to 6×, drag
/// when zoomed, double-tap to zoom in or back out, Share and Done in the bar.
struct ImageViewer: View {
    let viewed: ViewedImage
    @Environment(\.dismiss) private var dismiss
    @State private var zoom: CGFloat = 1
    @GestureState private var pinch: CGFloat = 1
    @State private var offset: CGSize = .zero
    @GestureState private var drag: CGSize = .zero

    private static let most: CGFloat = 6

    var body: some View {
        NavigationStack {
            viewed.image
                .resizable()
                .scaledToFit()
                .scaleEffect(zoom * pinch)
                .offset(x: offset.width + drag.width, y: offset.height + drag.height)
                .frame(maxWidth: .infinity, maxHeight: .infinity)
                .background(Color.black)
                .contentShape(Rectangle())
                .gesture(magnify)
                .simultaneousGesture(pan)
                .onTapGesture(count: 2) {
                    withAnimation {
                        if zoom > 1 { reset() } else { setZoom(2.5) }
                    }
                }
                .accessibilityElement()
                .accessibilityLabel(viewed.label)
                .accessibilityAddTraits(.isImage)
                .accessibilityZoomAction { action in
                    withAnimation { setZoom(action.direction == .zoomIn ? zoom * 1.5 : zoom / 1.5) }
                }
                .navigationTitle(viewed.name)
                #if os(iOS)
                .navigationBarTitleDisplayMode(.inline)
                .toolbarBackground(.visible, for: .navigationBar)
                #endif
                .toolbar {
                    ToolbarItem(placement: .cancellationAction) {
                        Button(tr("Done")) { dismiss() }
                    }
                    ToolbarItem(placement: .primaryAction) {
                        ShareLink(item: viewed.image, preview: SharePreview(viewed.name, image: viewed.image))
                    }
                }
        }
    }

    private var magnify: some Gesture {
        MagnifyGesture()
            .updating($pinch) { value, state, _ in state = value.magnification }
            .onEnded { value in setZoom(zoom * value.magnification) }
    }

    private var pan: some Gesture {
        DragGesture()
            .updating($drag) { value, state, _ in if zoom > 1 { state = value.translation } }
            .onEnded { value in
                guard zoom > 1 else { return }
                offset.width += value.translation.width
                offset.height += value.translation.height
            }
    }

    /// Zooms within 1×–6×; back at 1× the picture is centred again.
    private func setZoom(_ value: CGFloat) {
        zoom = min(max(value, 1), Self.most)
        if zoom == 1 { offset = .zero }
    }

    private func reset() {
        zoom = 1
        offset = .zero
    }
}
#endif
