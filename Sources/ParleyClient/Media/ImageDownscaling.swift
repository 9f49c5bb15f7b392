import Foundation

#if canImport(ImageIO)
import ImageIO
#endif

/// How big a picture goes out: a phone's camera takes 12–48 megapixel photos of several
/// megabytes, which nobody needs in a chat and which take long on a cellular uplink. The rule
/// is plain Swift (tested on Linux); ``ImageDownscaling`` applies it with ImageIO on Apple
/// platforms.
public struct ImageSizing: Sendable, Equatable {
    /// The longest edge a sent picture keeps, in pixels.
    public var maxPixelSize: Int
    /// A picture within ``maxPixelSize`` and at most this many bytes goes as it is.
    public var keepUpToBytes: Int64
    /// JPEG quality of a downscaled picture, 0...1.
    public var quality: Double

    /// The defaults: 2048 px, 1.5 MB kept as is, quality 0.8.
    public init(maxPixelSize: Int = 2048, keepUpToBytes: Int64 = 1_500_000, quality: Double = 0.8) {
        self.maxPixelSize = maxPixelSize
        self.keepUpToBytes = keepUpToBytes
        self.quality = quality
    }

    /// What to do with a picture.
    public enum Decision: Sendable, Equatable {
        /// Send the file as it is.
        case keep
        /// Re-encode as JPEG with its longest edge at most `maxPixelSize`.
        case downscale(maxPixelSize: Int, quality: Double)
    }

    /// The decision for a file of `contentType`, `width` × `height` pixels and `bytes` bytes.
    /// Not a picture, an animation (GIF) or a drawing (SVG): kept. HEIC is re-encoded even when
    /// small (browsers other than Safari cannot show it); a picture is never enlarged.
    public func decide(contentType: String, width: Int, height: Int, bytes: Int64) -> Decision {
        let type = contentType.lowercased().split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard type.hasPrefix("image/"), width > 0, height > 0 else { return .keep }
        if ["image/gif", "image/svg+xml"].contains(type) { return .keep }
        let longest = max(width, height)
        let heif = ["image/heic", "image/heif", "image/heic-sequence", "image/heif-sequence"].contains(type)
        if longest <= maxPixelSize && bytes <= keepUpToBytes && !heif { return .keep }
        return .downscale(maxPixelSize: min(longest, maxPixelSize), quality: min(max(quality, 0.1), 1))
    }
}

/// A preparation that downscales a picture before ``AttachmentUpload`` sends it (install it
/// first): on Apple platforms the context's `file` is re-encoded as a JPEG beside it when
/// ``ImageSizing`` says so; elsewhere (no ImageIO) the file goes as it is.
public struct ImageDownscaling: MessagePreparation {
    /// The name the outbox records this preparation by.
    public let name = "parley.downscale-image"
    /// The limits.
    public let sizing: ImageSizing

    /// A preparation with these limits.
    public init(sizing: ImageSizing = ImageSizing()) { self.sizing = sizing }

    /// A picked photo made a person's picture: at most `maxPixelSize` on its longer side, as
    /// JPEG (HEIC and large photos included, so every client can draw it, and it stays small).
    /// Where ImageIO is missing (Linux), or the bytes are no image it can read, they are
    /// returned as they are.
    public static func picture(_ data: Data, contentType: String, maxPixelSize: Int = 512) -> (data: Data, contentType: String) {
        #if canImport(ImageIO)
        let options: [CFString: Any] = [
            kCGImageSourceCreateThumbnailFromImageAlways: true,
            kCGImageSourceCreateThumbnailWithTransform: true,
            kCGImageSourceThumbnailMaxPixelSize: maxPixelSize,
        ]
        guard let image = CGImageSourceCreateWithData(data as CFData, nil),
            let scaled = CGImageSourceCreateThumbnailAtIndex(image, 0, options as CFDictionary)
        else { return (data, contentType) }
        let output = NSMutableData()
        guard let destination = CGImageDestinationCreateWithData(output as CFMutableData, "public.jpeg" as CFString, 1, nil) else {
            return (data, contentType)
        }
        CGImageDestinationAddImage(destination, scaled, [kCGImageDestinationLossyCompressionQuality: 0.85] as CFDictionary)
        guard CGImageDestinationFinalize(destination) else { return (data, contentType) }
        return (output as Data, "image/jpeg")
        #else
        return (data, contentType)
        #endif
    }

    /// Replaces the context's `file` (and `contentType`, `name`) by a smaller JPEG when the
    /// rule says so; anything it cannot read is left for the upload as it is.
    public func prepare(_ message: PreparedMessage) async throws -> PreparedMessage {
        #if canImport(ImageIO)
        guard let path = message.context["file"], message.context["attachmentId"] == nil,
            let contentType = message.context["contentType"], contentType.lowercased().hasPrefix("image/")
        else { return message }
        let source = URL(fileURLWithPath: path)
        guard let image = CGImageSourceCreateWithURL(source as CFURL, nil),
            let properties = CGImageSourceCopyPropertiesAtIndex(image, 0, nil) as? [CFString: Any],
            let width = properties[kCGImagePropertyPixelWidth] as? Int,
            let height = properties[kCGImagePropertyPixelHeight] as? Int
        else { return message }
        let bytes = ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.int64Value ?? 0
        guard case .downscale(let maxPixelSize, let quality) = sizing.decide(contentType: contentType, width: width, height: height, bytes: bytes)
        else { return message }
        let options: [CFString: Any] = [
            kCGImageSourceCreateThumbnailFromImageAlways: true,
            kCGImageSourceCreateThumbnailWithTransform: true,
            kCGImageSourceThumbnailMaxPixelSize: maxPixelSize,
        ]
        guard let scaled = CGImageSourceCreateThumbnailAtIndex(image, 0, options as CFDictionary) else { return message }
        let name = (message.context["name"] ?? source.lastPathComponent) as NSString
        let jpegName = (name.deletingPathExtension.isEmpty ? "image" : name.deletingPathExtension) + ".jpg"
        let target = source.deletingLastPathComponent().appendingPathComponent("scaled-" + jpegName)
        guard let destination = CGImageDestinationCreateWithURL(target as CFURL, "public.jpeg" as CFString, 1, nil) else { return message }
        CGImageDestinationAddImage(destination, scaled, [kCGImageDestinationLossyCompressionQuality: quality] as CFDictionary)
        guard CGImageDestinationFinalize(destination) else { return message }
        var prepared = message
        prepared.context["file"] = target.path
        prepared.context["contentType"] = "image/jpeg"
        prepared.context["name"] = jpegName
        return prepared
        #else
        return message
        #endif
    }
}
