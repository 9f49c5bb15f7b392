import Foundation
import Hummingbird
import ParleyProtocol

/// `POST /auth/register` and `POST /auth/login`.
struct AuthController: Sendable {
    let store: any ParleyStore
    let tokens: TokenService
    let passwords: PasswordHasher
    let decoyHash: String
    let now: @Sendable () -> Date

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("auth/register", use: register)
        group.post("auth/login", use: login)
    }

    @Sendable func register(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(RegisterRequest.self)
        let organization = try Self.organization(body.organization)
        let email = try Self.email(body.email)
        let displayName = Limits.trimmed(body.displayName)
        guard !displayName.isEmpty, displayName.count <= Limits.maxDisplayNameCharacters, !Limits.containsNul(displayName) else {
            throw APIError.invalid("displayName must be 1–\(Limits.maxDisplayNameCharacters) characters")
        }
        guard Limits.passwordLength.contains(body.password.count) else {
            throw APIError.invalid(
                "password must be \(Limits.passwordLength.lowerBound)–\(Limits.passwordLength.upperBound) characters")
        }
        let hash = try await passwords.hash(body.password)
        let user = try await store.register(
            organization: organization, email: email, displayName: displayName, passwordHash: hash, now: now())
        context.logger.info("Registered user", metadata: ["userId": "\(user.id)", "organizationId": "\(user.organizationId)"])
        return try JSONResponse.make(AuthResponse(token: try await tokens.issue(for: user, now: now()), user: user), status: .created)
    }

    @Sendable func login(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(LoginRequest.self)
        let failure = APIError(.unauthorized, "Invalid organization, email or password")
        guard let organization = try? Self.organization(body.organization), let email = try? Self.email(body.email),
            let found = try await store.credentials(organization: organization, email: email)
        else {
            // Same work as a real check, so timing does not tell which emails exist.
            _ = try await passwords.verify(body.password, hash: decoyHash)
            throw failure
        }
        guard try await passwords.verify(body.password, hash: found.passwordHash) else { throw failure }
        return try JSONResponse.make(AuthResponse(token: try await tokens.issue(for: found.user, now: now()), user: found.user))
    }

    static func organization(_ text: String) throws -> String {
        let name = Limits.trimmed(text)
        guard !name.isEmpty, name.count <= Limits.maxOrganizationCharacters, !Limits.containsNul(name) else {
            throw APIError.invalid("organization must be 1–\(Limits.maxOrganizationCharacters) characters")
        }
        return name
    }

    /// An email trimmed and lowercased: unique per organization in that form.
    static func email(_ text: String) throws -> String {
        let email = Limits.trimmed(text).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !email.contains(where: { $0.isWhitespace || $0.isNewline }), !Limits.containsNul(email)
        else { throw APIError.invalid("email is not a valid address") }
        return email
    }
}
