import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate authority made for one test, and server certificates it signs for
/// `localhost` and `127.0.0.1`, written as PEM files (what an operator would have).
public struct TestCertificateAuthority: Sendable {
    /// The CA's certificate (what a client is told to trust).
    public let certificatePEM: String
    private let key: P256.Signing.PrivateKey
    private let name: DistinguishedName

    public init(name commonName: String = "Parley Test CA") throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName(commonName) }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(key))
        self.key = key
        self.name = name
        certificatePEM = try certificate.serializeAsPEM().pemString
    }

    /// A server certificate and key for localhost and 127.0.0.1, signed by this CA.
    public func serverCertificate() throws -> (certificate: String, key: String) {
        let serverKey = P256.Signing.PrivateKey()
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(86_400),
            issuer: name, subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: .init(key))
        return (try certificate.serializeAsPEM().pemString, serverKey.pemRepresentation)
    }

    /// Writes a fresh server certificate and key into `directory` (replacing earlier ones) and
    /// returns their paths.
    @discardableResult
    public func writeServerFiles(into directory: String) throws -> (certificate: String, key: String) {
        let (certificate, key) = try serverCertificate()
        let certificatePath = "\(directory)/server.crt", keyPath = "\(directory)/server.key"
        try certificate.write(toFile: certificatePath, atomically: true, encoding: .utf8)
        try key.write(toFile: keyPath, atomically: true, encoding: .utf8)
        return (certificatePath, keyPath)
    }
}
