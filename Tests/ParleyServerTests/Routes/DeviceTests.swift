import Foundation
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Push tokens: registered idempotently, moved between users, removed by their owner only.
@Suite struct DeviceTests {
    @Test func registerIsIdempotentAndATokenMovesToItsLatestUser() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let token = String(repeating: "ab", count: 32)
        let body = #"{"platform":"ios","token":"\#(token.uppercased())","environment":"sandbox"}"#
        #expect(try await server.raw("POST", "devices", token: alice.token, json: body).status == 204)
        #expect(try await server.raw("POST", "devices", token: alice.token, json: body).status == 204)
        #expect(try await server.app.store.devices(userId: alice.id).map(\.token) == [token])
        // The phone changes hands (log out, log in as someone else): the token follows.
        #expect(try await server.raw("POST", "devices", token: bob.token, json: body).status == 204)
        #expect(try await server.app.store.devices(userId: alice.id).isEmpty)
        #expect(try await server.app.store.devices(userId: bob.id).map(\.environment) == [.sandbox])
        #expect(try await server.raw("DELETE", "devices/\(token)", token: alice.token).status == 404)
        #expect(try await server.raw("DELETE", "devices/\(token)", token: bob.token).status == 204)
        #expect(try await server.app.store.devices(userId: bob.id).isEmpty)
        for bad in [
            #"{"platform":"ios","token":"not hex","environment":"sandbox"}"#,
            #"{"platform":"android","token":"\#(token)","environment":"sandbox"}"#,
            #"{"platform":"ios","token":"\#(token)","environment":"staging"}"#,
        ] {
            #expect(try await server.raw("POST", "devices", token: alice.token, json: bad).status == 400, "\(bad)")
        }
        #expect(try await server.raw("POST", "devices", json: body).status == 401)
    }
}
