import Foundation

/// Test content shared by the server and SDK suites.
public enum Fixtures {
    /// A PNG header declaring 640×480, then filler: enough for the sniffer and for ranges.
    public static let png: Data = {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        bytes += Array("IHDR".utf8) + [0, 0, 2, 128, 0, 0, 1, 224]
        bytes += (0..<200_000).map { UInt8($0 % 251) }
        return Data(bytes)
    }()
}
