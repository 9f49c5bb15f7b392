/// Reads an image's type and size from its first bytes, where that is cheap (PNG, GIF, JPEG, WebP).
enum ImageSniffer {
    struct Info: Equatable {
        var contentType: String
        var width: Int?
        var height: Int?
    }

    static func inspect(_ bytes: [UInt8]) -> Info? {
        func be16(_ i: Int) -> Int { Int(bytes[i]) << 8 | Int(bytes[i + 1]) }
        func be32(_ i: Int) -> Int { Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]) }
        func le16(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 }
        if bytes.count >= 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            return Info(contentType: "image/png", width: be32(16), height: be32(20))
        }
        if bytes.count >= 10, bytes.starts(with: Array("GIF8".utf8)) {
            return Info(contentType: "image/gif", width: le16(6), height: le16(8))
        }
        if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return Info(contentType: "image/webp")
        }
        if bytes.count >= 3, bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
            // Walk the segments to the first start-of-frame marker, which holds the size.
            var i = 2
            while i + 9 < bytes.count, bytes[i] == 0xFF {
                let marker = bytes[i + 1]
                if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                    return Info(contentType: "image/jpeg", width: be16(i + 7), height: be16(i + 5))
                }
                i += 2 + be16(i + 2)
            }
            return Info(contentType: "image/jpeg")
        }
        return nil
    }
}
