import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The SDK's first layer against a real server: typed answers, typed errors.
@Suite struct ParleyAPITests {
    @Test func serverErrorsArriveWithTheirCodes() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        do {
            _ = try await alice.api.conversation(EntityID())
            Issue.record("expected not_found")
        } catch let error as ClientError {
            #expect(error.kind == .server && error.code == .notFound && error.httpStatus == 404)
            #expect(!error.isTransient)
        }
        do {
            _ = try await server.api(token: "nope").me()
            Issue.record("expected unauthorized")
        } catch let error as ClientError {
            #expect(error.code == .unauthorized)
        }
    }

    @Test func unreachableServerIsATransientTransportError() async throws {
        // A port that was just free: nothing listens there.
        let server = try await TestServer.start()
        let url = server.baseURL
        await server.stop()
        do {
            _ = try await ParleyAPI(baseURL: url).login(.init(organization: "a", email: "a@x.io", password: "whatever1"))
            Issue.record("expected a transport error")
        } catch let error as ClientError {
            #expect(error.kind == .transport && error.isTransient)
        }
        let realtime = RealtimeConnection(serverURL: url, token: "t")
        await #expect(throws: ClientError.self) { try await realtime.connect(timeout: .seconds(5)) }
    }

    @Test func pendingCommandsFailWhenTheConnectionCloses() async throws {
        let server = try await TestServer.start()
        let alice = try await server.register("alice@x.io")
        let socket = try await alice.connect()
        await server.stop()
        await #expect(throws: ClientError.self) { try await socket.ping() }
        #expect(await socket.closedReason?.isTransient == true)
    }

    @Test func transienceFollowsTheCode() {
        #expect(ClientError(kind: .server, code: .internal, message: "").isTransient)
        #expect(ClientError(kind: .server, code: .rateLimited, message: "").isTransient)
        #expect(!ClientError(kind: .server, code: .invalidRequest, message: "").isTransient)
        #expect(ClientError(kind: .timeout, message: "").isTransient)
        #expect(!ClientError(kind: .decoding, message: "").isTransient)
    }
}
