#if canImport(SwiftUI)
import CoreTransferable
import Foundation
import PhotosUI
import SwiftUI
import UniformTypeIdentifiers
#if os(iOS)
import UIKit
#endif

/// What the input bar's pickers hand over: a file in the app's temporary folder, its MIME
/// type, and whether it is a picture. The chat copies it into the SDK's outbox folder
/// (``ParleyClient/ChatModel/keepFile(_:)``) and the temporary file goes.
struct PickedMedia {
    let file: URL
    let contentType: String
    let isImage: Bool

    /// Writes picked bytes to a temporary file named for their type ("photo.heic", "photo.jpg").
    static func temporary(_ data: Data, type: UTType) throws -> PickedMedia {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("photo").appendingPathExtension(type.preferredFilenameExtension ?? "jpg")
        try data.write(to: file)
        return PickedMedia(file: file, contentType: type.preferredMIMEType ?? "image/jpeg", isImage: type.conforms(to: .image))
    }

    /// A photo or a video chosen in the Photos picker, as a file. A video comes as the file the
    /// picker hands over (never loaded whole into memory); a picture as its bytes in the
    /// encoding the library keeps (HEIC or JPEG; the SDK downscales it before the upload).
    static func load(_ item: PhotosPickerItem) async -> PickedMedia? {
        if item.supportedContentTypes.contains(where: { $0.conforms(to: .movie) }) {
            guard let movie = try? await item.loadTransferable(type: PickedMovie.self) else { return nil }
            let type = UTType(filenameExtension: movie.file.pathExtension) ?? .movie
            return PickedMedia(file: movie.file, contentType: type.preferredMIMEType ?? "video/quicktime", isImage: false)
        }
        let type = item.supportedContentTypes.first { $0.conforms(to: .image) } ?? .jpeg
        guard let data = try? await item.loadTransferable(type: Data.self) else { return nil }
        return try? temporary(data, type: type)
    }

    /// Removes the temporary folder once the SDK has its copy.
    func discard() {
        try? FileManager.default.removeItem(at: file.deletingLastPathComponent())
    }
}

/// A video from the Photos picker, received as a file and copied out of the picker's folder
/// (which the system removes when the import returns).
struct PickedMovie: Transferable {
    let file: URL

    static var transferRepresentation: some TransferRepresentation {
        FileRepresentation(contentType: .movie) { movie in
            SentTransferredFile(movie.file)
        } importing: { received in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString, isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let copy = folder.appendingPathComponent(received.file.lastPathComponent)
            try FileManager.default.copyItem(at: received.file, to: copy)
            return PickedMovie(file: copy)
        }
    }
}

#if os(iOS)
/// The camera, full screen: a photo taken comes back as JPEG bytes, Cancel as nil. Needs
/// `NSCameraUsageDescription` in the app's Info.plist; shown only where a camera exists
/// (``isAvailable``).
struct CameraPicker: UIViewControllerRepresentable {
    let onFinish: (Data?) -> Void

    /// Whether this device has a camera the picker can use.
    static var isAvailable: Bool { UIImagePickerController.isSourceTypeAvailable(.camera) }

    func makeUIViewController(context: Context) -> UIImagePickerController {
        let picker = UIImagePickerController()
        picker.sourceType = .camera
        picker.cameraCaptureMode = .photo
        picker.delegate = context.coordinator
        return picker
    }

    func updateUIViewController(_ picker: UIImagePickerController, context: Context) {}

    func makeCoordinator() -> Coordinator { Coordinator(onFinish: onFinish) }

    @MainActor
    final class Coordinator: NSObject, UIImagePickerControllerDelegate, UINavigationControllerDelegate {
        let onFinish: (Data?) -> Void
        init(onFinish: @escaping (Data?) -> Void) { self.onFinish = onFinish }

        func imagePickerController(_ picker: UIImagePickerController, didFinishPickingMediaWithInfo info: [UIImagePickerController.InfoKey: Any]) {
            let image = info[.originalImage] as? UIImage
            onFinish(image?.jpegData(compressionQuality: 0.85))
        }

        func imagePickerControllerDidCancel(_ picker: UIImagePickerController) { onFinish(nil) }
    }
}
#endif
#endif
