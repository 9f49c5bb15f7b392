import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// Every route the router serves, taken from the router itself (so a route added later is
/// covered without editing this table), refuses every kind of bad token the same way:
/// `401 unauthorized` with the contract's error body, the same bytes whatever was wrong with
/// the token (so an attacker learns nothing from the difference), and nothing changed.
@Suite(.serialized) struct ContractAuthenticationTests {
    /// The routes under `/api/v1` that need no token: signing up and in, liveness, the document.
    static let publicRoutes: Set<String> = [
        "POST /api/v1/auth/register", "POST /api/v1/auth/login", "GET /api/v1/health", "GET /api/v1/openapi.json",
        // The mailed link's token is its credential (EmailVerificationTests).
        "POST /api/v1/auth/verify",
    ]

    /// `(method, template)` of every authenticated route, from the router.
    static func authenticatedRoutes(_ server: TestServer) async throws -> [(method: String, template: String)] {
        let router = try await server.app.buildRouter()
        return router.routes
            .map { (method: $0.method.rawValue, template: $0.path.description) }
            .filter { $0.template.hasPrefix("/api/v1/") && !publicRoutes.contains("\($0.method) \($0.template)") }
            .map { (method: $0.method, template: String($0.template.dropFirst("/api/v1/".count))) }
            .sorted { ($0.template, $0.method) < ($1.template, $1.method) }
    }

    /// base64url without padding.
    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Every way a token can be wrong, by name; each is one property away from a good token.
    static func badTokens(_ world: ContractWorld, deactivated: TestUser) async throws -> [(name: String, headers: [String: String])] {
        let tokens = world.server.app.tokens
        let alice = world.alice.auth.user
        let lifetime = tokens.lifetime.components.seconds
        let expired = try await tokens.issue(for: alice, now: Date().addingTimeInterval(-Double(lifetime) - 120))
        var otherOrganization = alice
        otherOrganization.organizationId = world.mallory.auth.user.organizationId
        var unknownUser = alice
        unknownUser.id = EntityID()
        let stranger = try await TokenService(secret: Array(repeating: 9, count: 40), lifetime: .seconds(3600))
        let parts = world.alice.token.split(separator: ".").map(String.init)
        let unsigned = base64URL(#"{"alg":"none","typ":"JWT"}"#) + "." + parts[1] + "."
        var tampered = parts
        tampered[2] = String(tampered[2].reversed())
        return [
            ("no token", [:]),
            ("empty bearer", ["Authorization": "Bearer "]),
            ("garbage", ["Authorization": "Bearer garbage"]),
            ("basic scheme", ["Authorization": "Basic YWxpY2U6cGFzcw=="]),
            ("the token without a scheme", ["Authorization": world.alice.token]),
            ("expired", ["Authorization": "Bearer \(expired)"]),
            ("alg none", ["Authorization": "Bearer \(unsigned)"]),
            ("tampered signature", ["Authorization": "Bearer \(tampered.joined(separator: "."))"]),
            ("another organization claimed", ["Authorization": "Bearer \(try await tokens.issue(for: otherOrganization))"]),
            ("unknown user", ["Authorization": "Bearer \(try await tokens.issue(for: unknownUser))"]),
            ("another server's key", ["Authorization": "Bearer \(try await stranger.issue(for: alice))"]),
            ("deactivated user", ["Authorization": "Bearer \(deactivated.token)"]),
            ("oversized", ["Authorization": "Bearer " + String(repeating: "a", count: 6000)]),
        ]
    }

    /// A token refused on one route and accepted on another would let a stolen, expired or
    /// revoked session keep reading or writing; each refusal must also change nothing.
    @Test(arguments: StoreKind.available)
    func everyAuthenticatedRouteRefusesEveryBadTokenAlikeAndChangesNothing(_ kind: StoreKind) async throws {
        let world = try await ContractWorld.build(kind)
        defer { Task { await world.server.stop() } }
        let dave = try await world.server.register("dave@x.io", organization: "acme")
        try await world.alice.api.deactivate(dave.id)
        let routes = try await Self.authenticatedRoutes(world.server)
        #expect(routes.count >= 38, "\(routes.map { "\($0.method) \($0.template)" })")
        #expect(routes.contains { $0.method == "GET" && $0.template == "ws" }, "the WebSocket upgrade is authenticated too")
        let tokens = try await Self.badTokens(world, deactivated: dave)
        let before = try await world.snapshot()
        for route in routes {
            let path = world.path(route.template, world.directValues)
            let body = ["POST", "PATCH", "PUT"].contains(route.method) ? Data(#"{"text":"x","name":"x","emoji":"x","upToSeq":1}"#.utf8) : nil
            var bodies: [String: [String]] = [:]
            for token in tokens {
                let answer = try await world.server.exchange(route.method, path, body: body, headers: token.headers)
                expectContractError(answer, .unauthorized, "\(route.method) \(route.template) with \(token.name)")
                bodies[canonicalJSON(answer.body), default: []].append(token.name)
            }
            #expect(bodies.count == 1, "\(route.method) \(route.template): the refusals differ by the kind of bad token: \(bodies)")
        }
        #expect(try await world.snapshot() == before)
    }

    /// The bad tokens above differ from a working one in exactly one property: a token the same
    /// service issues now for the same user works, so the table tests what it claims.
    @Test func aFreshlyIssuedTokenOfTheSameUserWorks() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let fresh = try await world.server.app.tokens.issue(for: world.alice.auth.user)
        let me = try await world.server.call("GET", "users/me", token: fresh)
        #expect(me.status == 200)
        #expect(try WireCoding.makeDecoder().decode(User.self, from: me.body).id == world.alice.id)
        let history = try await world.server.call("GET", "conversations/\(world.direct.id)/messages", token: fresh)
        #expect(history.status == 200)
    }

    /// Exactly the public routes answer without a token: a new route registered outside the
    /// authenticated group by mistake would serve anyone.
    @Test func onlyTheKnownPublicRoutesAnswerWithoutAToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let router = try await server.app.buildRouter()
        let served = Set(router.routes.map { "\($0.method.rawValue) \($0.path.description)" }.filter { $0.contains(" /api/v1/") })
        #expect(Self.publicRoutes.isSubset(of: served), "\(Self.publicRoutes.subtracting(served))")
        var open: [String] = []
        for route in served.sorted() {
            let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
            let path = String(parts[1].dropFirst("/api/v1/".count))
                .replacingOccurrences(of: "{id}", with: "\(EntityID())").replacingOccurrences(of: "{messageId}", with: "\(EntityID())")
                .replacingOccurrences(of: "{userId}", with: "\(EntityID())").replacingOccurrences(of: "{upload}", with: "\(EntityID())")
                .replacingOccurrences(of: "{emoji}", with: "x").replacingOccurrences(of: "{code}", with: "c")
                .replacingOccurrences(of: "{token}", with: String(repeating: "ab", count: 16))
            let answer = try await server.call(parts[0], path, token: nil, json: parts[0] == "GET" || parts[0] == "DELETE" ? nil : "{}")
            if answer.status != 401 { open.append(route) }
        }
        #expect(Set(open) == Self.publicRoutes, "answered without a token: \(open)")
    }

    /// An expired, revoked or cross-organization token must not open a WebSocket either: the
    /// socket would deliver every message of the user's conversations.
    @Test func theWebSocketUpgradeRefusesTheSameBadTokens() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let dave = try await world.server.register("dave@x.io", organization: "acme")
        try await world.alice.api.deactivate(dave.id)
        let tokens = try await Self.badTokens(world, deactivated: dave)
        for token in tokens {
            guard let header = token.headers["Authorization"], header.hasPrefix("Bearer "), header.count > 7 else { continue }
            let connection = RealtimeConnection(serverURL: world.server.baseURL, token: String(header.dropFirst(7)))
            await #expect(throws: ClientError.self, "\(token.name)") { try await connection.connect(timeout: .seconds(10)) }
            await connection.close()
            let viaQuery = try await world.server.call(
                "GET", "ws?token=\(String(header.dropFirst(7)).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")", token: nil)
            expectContractError(viaQuery, .unauthorized, "ws?token= with \(token.name)")
        }
        // The right token still connects, and the refused attempts left no one online.
        let socket = try await world.alice.connect()
        #expect(try await world.bob.api.users().filter(\.isOnline).map(\.id) == [world.alice.id])
        await socket.close()
    }

    /// A deactivated admin's session cannot keep managing the organization: role changes,
    /// invites and deactivations with the old token are 401 and change nothing.
    @Test func aDeactivatedAdminsTokenChangesNothingInTheOrganization() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        _ = try await world.alice.api.setRole(.admin, of: world.bob.id)
        try await world.bob.api.deactivate(world.alice.id)
        let before = try await world.bob.api.invites()
        let users = try await world.bob.api.users().map { "\($0.id) \($0.role?.rawValue ?? "-")" }
        for (method, path, json) in [
            ("PATCH", "users/\(world.bob.id)", #"{"role":"member"}"#),
            ("DELETE", "users/\(world.bob.id)", nil),
            ("POST", "organization/invites", #"{"maxUses":5}"#),
            ("DELETE", "organization/invites/\(world.invite.code)", nil),
            ("PATCH", "organization", #"{"allowedEmailDomains":["x.io"]}"#),
        ] as [(String, String, String?)] {
            let answer = try await server.call(method, path, token: world.alice.token, json: json)
            expectContractError(answer, .unauthorized, "\(method) \(path)")
        }
        #expect(try await world.bob.api.invites() == before)
        #expect(try await world.bob.api.users().map { "\($0.id) \($0.role?.rawValue ?? "-")" } == users)
        #expect(try await world.bob.api.organization().allowedEmailDomains.isEmpty)
    }
}
