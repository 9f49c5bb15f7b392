import Foundation
import Logging
import ParleyProtocol
@testable import ParleyStorage
import ParleyTestSupport
import Testing
@testable import ParleySQLite
@testable import ParleyPostgres

/// A group commit answers a refused job (a rule's `ChatError`) with its error and commits the
/// rest of the batch without a savepoint each, on the promise that a rule refuses before it
/// writes. Both stores check that promise: a job that wrote and then refused must leave nothing
/// behind, while its batch's other jobs still commit.
@Suite struct RefusedAfterWritingTests {
    struct Refusal: Error {}

    @Test(arguments: StoreKind.available)
    func aJobRefusedAfterItWroteLeavesNothingAndTheRestOfItsBatchCommits(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let ada = try await register(store, "ada@acme.test")
            let bob = try await register(store, "bob@acme.test")
            let cy = try await register(store, "cy@acme.test")
            let first = try await store.createConversation(group(ada, [bob], "First")).conversation.id
            let second = try await store.createConversation(group(ada, [cy], "Second")).conversation.id
            let third = try await store.createConversation(group(ada, [bob, cy], "Third")).conversation.id
            let jobs = [
                rename(first, "First, renamed"),
                // Writes, then refuses: the promise broken.
                QueuedWrite(conversationId: second) { tx in
                    _ = try await tx.lockConversation(second)
                    try await tx.setName("Second, half-renamed", of: second)
                    throw ChatError(.forbidden, "refused after writing")
                },
                rename(third, "Third, renamed"),
            ]
            let results = await runBatch(jobs, on: store)
            #expect(results.count == 3)
            #expect((try? results[0].get()) != nil)
            #expect((try? results[2].get()) != nil)
            // The refused job gets its own refusal as its answer, whichever path answered it.
            guard case .failure(let error) = results[1] else { Issue.record("the refused job succeeded"); return }
            #expect((error as? ChatError)?.code == .forbidden, "\(error)")
            #expect(try await name(of: first, in: store, for: ada) == "First, renamed")
            #expect(try await name(of: second, in: store, for: ada) == "Second", "a refused job's write stood")
            #expect(try await name(of: third, in: store, for: ada) == "Third, renamed")
        }
    }

    @Test(arguments: StoreKind.available)
    func aJobRefusedBeforeWritingIsAnsweredWithoutUndoingTheOthers(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let ada = try await register(store, "ada@acme.test")
            let bob = try await register(store, "bob@acme.test")
            let one = try await store.createConversation(group(ada, [bob], "One")).conversation.id
            let two = try await store.createConversation(group(ada, [bob], "Two")).conversation.id
            let jobs = [
                rename(one, "One, renamed"),
                QueuedWrite(conversationId: two) { tx in
                    _ = try await tx.lockConversation(two)
                    throw ChatError(.forbidden, "refused before writing")
                },
                rename(two, "Two, renamed"),
            ]
            let results = await runBatch(jobs, on: store)
            #expect((try? results[0].get()) != nil)
            #expect(((results[1].failure) as? ChatError)?.code == .forbidden)
            #expect((try? results[2].get()) != nil)
            #expect(try await name(of: one, in: store, for: ada) == "One, renamed")
            #expect(try await name(of: two, in: store, for: ada) == "Two, renamed")
        }
    }

    // MARK: - Helpers

    func group(_ creator: User, _ others: [User], _ name: String) -> NewConversation {
        NewConversation(
            organizationId: creator.organizationId, creatorId: creator.id, type: .group, name: name,
            participantIds: others.map(\.id), now: t0)
    }

    func rename(_ conversationId: EntityID, _ name: String) -> QueuedWrite {
        QueuedWrite(conversationId: conversationId) { tx in
            _ = try await tx.lockConversation(conversationId)
            try await tx.setName(name, of: conversationId)
            return name
        }
    }

    /// Runs the jobs as one batch of the store's group commit.
    func runBatch(_ jobs: [QueuedWrite], on store: any ParleyStore) async -> [Result<any Sendable, any Error>] {
        if let sqlite = store as? SQLiteStore {
            return await SQLiteStore.commitBatch(jobs, writer: sqlite.writer)
        }
        let postgres = store as! PostgresStore
        return await PostgresStore.writeBatch(jobs, client: postgres.client, stranded: postgres.stranded, logger: postgres.logger)
    }

    func name(of conversationId: EntityID, in store: any ParleyStore, for viewer: User) async throws -> String? {
        try await store.reading { tx in try await tx.conversationHeader(conversationId)?.name }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
