import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ParleyProtocol

/// The web client's static files (plain HTML, CSS and JavaScript modules, no build step),
/// served at `/` and `/web/{file}` with a strict Content-Security-Policy.
///
/// The files ship as the `ParleyServer` target's resources (`Sources/ParleyServer/Web`); a
/// `--web-root` folder replaces them and is read again on every request, so a change to a file
/// shows on the next reload. Only plain file names in that one folder are served (no paths,
/// no dot files), so nothing outside it can be reached.
struct WebClientFiles: Sendable {
    /// The folder the files are read from; nil when neither a web root nor the resources exist.
    let root: URL?
    /// Read from disk on every request (a web root given by the operator) or once at start.
    let reload: Bool
    private let cached: [String: ByteBuffer]

    /// Sent with every file: no inline script or style, no plugin, nothing from another origin,
    /// not framed. `blob:` images are the attachments the client fetched with its token.
    static let contentSecurityPolicy = [
        "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' blob: data:",
        "media-src 'self' blob:", "connect-src 'self'", "font-src 'self'", "object-src 'none'",
        "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
    ].joined(separator: "; ")

    init(webRoot: String?) {
        if let webRoot {
            root = URL(fileURLWithPath: webRoot, isDirectory: true)
            reload = true
            cached = [:]
        } else {
            root = Self.bundledFolder()
            reload = false
            var files: [String: ByteBuffer] = [:]
            if let root, let names = try? FileManager.default.contentsOfDirectory(atPath: root.path) {
                for name in names where Self.isServable(name) {
                    if let data = FileManager.default.contents(atPath: root.appendingPathComponent(name).path) {
                        files[name] = ByteBuffer(bytes: data)
                    }
                }
            }
            cached = files
        }
    }

    /// The resources folder SwiftPM puts beside the executable (the `parley` binary, or the
    /// test bundle's folder). Looked up by hand: `Bundle.module` stops the process when the
    /// folder is missing, and a server copied without it should still serve its API.
    static func bundledFolder() -> URL? {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        var candidates = [executable.deletingLastPathComponent()]
        if let resources = Bundle.main.resourceURL { candidates.append(resources) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for folder in candidates {
            for bundle in ["Parley_ParleyServer.resources", "Parley_ParleyServer.bundle/Contents/Resources", "Parley_ParleyServer.bundle"] {
                let web = folder.appendingPathComponent(bundle).appendingPathComponent("Web")
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: web.path, isDirectory: &isDirectory), isDirectory.boolValue {
                    return web
                }
            }
        }
        return nil
    }

    /// A plain file name of a kind the client uses: no folder, no dot file.
    static func isServable(_ name: String) -> Bool {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/"), !name.contains("\\") else { return false }
        return contentType(of: name) != nil
    }

    static func contentType(of name: String) -> String? {
        switch (name as NSString).pathExtension.lowercased() {
        case "html": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        case "json", "webmanifest": "application/json"
        default: nil
        }
    }

    /// The file's bytes, or nil when there is no such file.
    func contents(of name: String) -> ByteBuffer? {
        guard Self.isServable(name) else { return nil }
        if !reload { return cached[name] }
        guard let root, let data = FileManager.default.contents(atPath: root.appendingPathComponent(name).path) else { return nil }
        return ByteBuffer(bytes: data)
    }

    /// The response for one file, with the security headers; 404 when it does not exist.
    func response(for name: String) -> Response {
        guard let body = contents(of: name), let type = Self.contentType(of: name) else {
            // The contract's error body, as for any other route.
            let message = root == nil ? "The web client's files are not installed beside this server" : "Not found"
            let body = (try? WireCoding.makeEncoder().encode(ErrorBody(error: ErrorInfo(code: .notFound, message: message)))) ?? Data()
            return Response(
                status: .notFound, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        var headers: HTTPFields = [
            .contentType: type,
            .contentSecurityPolicy: Self.contentSecurityPolicy,
            .xContentTypeOptions: "nosniff",
            .cacheControl: "no-cache",
        ]
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }

    /// `GET /` (the app) and `GET /web/{file}`.
    func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/") { _, _ in self.response(for: "index.html") }
        router.get("web/:file") { _, context in
            self.response(for: context.parameters.get("file") ?? "")
        }
    }
}
