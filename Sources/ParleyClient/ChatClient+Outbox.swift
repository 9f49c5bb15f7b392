import Foundation
import ParleyProtocol

/// What ``ChatClient/synchronize()`` found.
public struct SyncReport: Sendable, Equatable {
    /// Whether the server answered (a refusal counts: it was reachable).
    public var reachedServer: Bool
    /// Messages still queued in the outbox.
    public var queued: Int
    /// Messages the server refused, waiting for the user to resend or discard them.
    public var failed: Int
    /// The server refused the token: the app must sign the user in again.
    public var signInRequired: Bool
}

// MARK: Sending

extension ChatClient {
    /// How long a message may go without the server's answer before the chat shows it as
    /// ``Delivery/notSent`` (it stays in the outbox and is retried; the user may retry now).
    public static let sendTimeout: Duration = .seconds(5)


    /// Sends a text message optimistically: it is in the database (and on screen) when this
    /// returns; the outbox delivers it when it can.
    @discardableResult
    public func send(
        text: String, in conversationId: EntityID, replyTo: EntityID? = nil, threadRootId: EntityID? = nil, mentions: [EntityID] = []
    ) async throws -> LocalMessage {
        let trimmed = Limits.trimmed(text)
        guard !trimmed.isEmpty, trimmed.count <= Limits.maxTextCharacters, !Limits.containsNul(trimmed) else {
            throw ClientError(kind: .server, code: .invalidRequest, message: "A message is 1–\(Limits.maxTextCharacters) characters")
        }
        return try await send(
            SendMessageRequest(
                clientMessageId: "", text: trimmed, replyToId: replyTo, threadRootId: threadRootId,
                mentions: mentions.isEmpty ? nil : Array(mentions.prefix(Limits.maxMentions))),
            in: conversationId)
    }

    /// Sends any message optimistically: the prechecks run first (a veto throws ``SendVetoed``
    /// and writes nothing); then the message and its outbox entry, with the preparations still to
    /// run, are written in one transaction. An empty `clientMessageId` gets a new one.
    @discardableResult
    public func send(_ request: SendMessageRequest, in conversationId: EntityID, context: [String: String] = [:]) async throws -> LocalMessage {
        var request = request
        if request.clientMessageId.isEmpty { request.clientMessageId = environment.newID() }
        for precheck in hooks.prechecks {
            if case .veto(let reason) = await precheck.check(request, in: conversationId) { throw SendVetoed(reason: reason) }
        }
        // The file to upload is copied into the SDK's storage first: the picked one may be gone
        // by the time the outbox uploads it (after a restart, too).
        var context = context
        if let file = context["file"] {
            context["file"] = try outboxFiles.stage(URL(fileURLWithPath: file), for: request.clientMessageId).path
        }
        let message: LocalMessage
        do {
            message = try await database.enqueue(
                request, in: conversationId, senderId: userId, now: environment.now(),
                preparations: hooks.preparations.map(\.name), context: context)
        } catch {
            if context["file"] != nil { outboxFiles.release(clientMessageId: request.clientMessageId) }
            throw error
        }
        watchSend(message.id, in: conversationId)
        messagesSentThisLaunch += 1
        notify(.messages(conversationId))
        Task { await self.flushOutbox() }
        return message
    }

    /// Deletes a message on this device only ("delete for me"): it is hidden at once, and
    /// catch-up never brings it back. One's own message that has not gone yet does not go: it
    /// is dropped (or, refused, discarded); one already on its way (the server may store it)
    /// is hidden when it arrives.
    public func deleteForMe(_ message: LocalMessage) async throws {
        let clientMessageId = message.clientMessageId
        if message.senderId == userId, !message.isConfirmed {
            switch try await database.outboxState(clientMessageId: clientMessageId)?.state {
            case "failed":
                _ = try await database.discard(clientMessageId: clientMessageId)
                forgetSend(clientMessageId)
            case "queued": _ = try await dropIfNeverSent(clientMessageId)
            default: break
            }
        }
        try await database.hide(senderId: message.senderId, clientMessageId: clientMessageId)
        notify(.messages(message.conversationId))
        notify(.conversations)
    }

    /// Queues a failed message again.
    public func resend(clientMessageId: String, in conversationId: EntityID) async throws {
        guard try await database.resend(clientMessageId: clientMessageId) else { return }
        watchSend(LocalMessage.id(senderId: userId, clientMessageId: clientMessageId), in: conversationId)
        notify(.messages(conversationId))
        Task { await self.flushOutbox() }
    }

    /// Copies a file the user picked into the SDK's own storage and returns the copy, to pass
    /// as the message's `file` later. Call it while the file is readable (inside the picker's
    /// callback, with its security scope open); ``send(_:in:context:)`` copies any other file
    /// itself when the message is queued. The copy is removed once the server has the message.
    public nonisolated func keepFileForSending(_ file: URL) throws -> URL {
        try outboxFiles.pick(file)
    }

    /// Drops a failed message. A message still queued or on its way is deleted as an unsent
    /// one is (``revokeUnsent(clientMessageId:in:)``): it never goes, or, when the server may
    /// have it already, it is deleted there once it has an id; it never reappears.
    public func discard(clientMessageId: String, in conversationId: EntityID) async throws {
        let state = try await database.outboxState(clientMessageId: clientMessageId)?.state
        if schedule.inFlight.contains(clientMessageId) || state == "queued" {
            try await revokeUnsent(clientMessageId: clientMessageId, in: conversationId)
            return
        }
        _ = try await database.discard(clientMessageId: clientMessageId)
        forgetSend(clientMessageId)
        notify(.messages(conversationId))
    }

    /// Sends every due outbox head, oldest first, over the WebSocket when connected, else HTTP.
    /// Returns when the outbox has nothing due (a call during a flush waits for that flush).
    public func flushOutbox() async {
        await inSingleFlight(.outbox, waiting: true) {
            do {
                // Nothing goes while the token is refused: the messages wait, still queued.
                while !signInRequired,
                    let entry = schedule.next(
                        of: try await database.outboxHeads(), now: environment.now(), excluding: cancelledSends)
                {
                    guard await deliver(entry) else {
                        logger.error("The outbox stops: the local database refuses to record failed sends")
                        return false
                    }
                }
            } catch is CancellationError {
                // The client is stopping; the entries stay in the outbox for the next start.
                return false
            } catch {
                logger.warning("Outbox read failed", metadata: ["error": "\(error)"])
            }
            return true
        } then: {
            guard !Task.isCancelled else { return }
            // Then the edits and reactions waiting for the server, in the order they were made,
            // and the deletes of messages that were on their way.
            await flushChanges()
            await flushRevokes()
            await scheduleOutboxWake()
        }
    }

    /// Every queued message is due now, in the database and in memory (the server answered,
    /// the connection is back, the user asked, the app is leaving the screen).
    func makeOutboxDue() async {
        try? await database.outboxRetryNow()
        schedule.retryAll()
    }

    /// Sends one entry and writes its outcome; false when the flush must stop (failed sends
    /// could not be recorded, repeatedly).
    private func deliver(_ entry: OutboxEntry) async -> Bool {
        let clientMessageId = entry.request.clientMessageId
        let messageId = LocalMessage.id(senderId: userId, clientMessageId: clientMessageId)
        var keepGoing = true
        do {
            let request = try await prepare(entry)
            // Deleted by the user before it ever went: it never goes (the entry is being
            // discarded). From here to its answer, it is in flight.
            guard !cancelledSends.contains(clientMessageId) else { return true }
            schedule.sending(clientMessageId)
            let stored: Message
            if let channel, machine.state == .connected {
                stored = try await channel.sendMessage(request)
            } else {
                stored = try await transport.send(request, to: entry.conversationId)
            }
            try await database.apply([stored])
            sendStartedAt[messageId] = nil
            schedule.settled(clientMessageId)
            // The server has it (and the file): the SDK's copy goes.
            if entry.context["file"] != nil { outboxFiles.release(clientMessageId: clientMessageId) }
            // The server answers: entries waiting out a backoff go now (one update, only when
            // some may be waiting, not a read per send).
            if backingOff || entry.attempts > 0 {
                backingOff = false
                await makeOutboxDue()
            }
        } catch {
            switch OutboxSchedule.decide(error, attempts: entry.attempts, backoff: { self.machine.backoff($0).seconds }) {
            case .waitForSignIn:
                // Not the message's fault: keep it queued, as it is, until the user signs in again.
                requireSignIn()
            case .refused(let reason):
                sendStartedAt[messageId] = nil
                schedule.settled(clientMessageId)
                try? await database.outboxRejected(clientMessageId: clientMessageId, reason: reason)
            case .retry(let delay):
                // No answer (it may or may not be stored), or the server asked for time.
                let retryAt = environment.now().addingTimeInterval(delay)
                backingOff = true
                schedule.failed(clientMessageId, retryAt: retryAt)
                let written = (try? await database.outboxAttemptFailed(clientMessageId: clientMessageId, retryAt: retryAt)) != nil
                keepGoing = schedule.recordedFailure(written: written)
            }
        }
        // Its answer (or its failure) is written: no longer in flight.
        schedule.sent(clientMessageId)
        notify(.messages(entry.conversationId))
        notify(.conversations)
        return keepGoing
    }

    /// Runs the entry's remaining preparations in order, recording each as it finishes.
    private func prepare(_ entry: OutboxEntry) async throws -> SendMessageRequest {
        let messageId = LocalMessage.id(senderId: userId, clientMessageId: entry.request.clientMessageId)
        let conversationId = entry.conversationId
        var message = PreparedMessage(
            request: entry.request, context: entry.context, conversationId: entry.conversationId,
            reportProgress: { fraction in
                Task { await self.notify(.progress(conversationId: conversationId, messageId: messageId, fraction: fraction)) }
            })
        var remaining = entry.preparations
        while let name = remaining.first {
            let (request, left, clientMessageId) = (message.request, remaining, entry.request.clientMessageId)
            message.saveContext = { context in
                try? await self.database.outboxPrepared(clientMessageId: clientMessageId, request: request, context: context, remaining: left)
            }
            guard let preparation = hooks.preparations.first(where: { $0.name == name }) else {
                throw PreparationFailed("the preparation \"\(name)\" is not available in this version")
            }
            do {
                message = try await preparation.prepare(message)
            } catch let error as ClientError where error.isTransient {
                throw error
            } catch let error as PreparationFailed {
                throw error
            } catch {
                throw PreparationFailed("\(error)")
            }
            message.request.clientMessageId = entry.request.clientMessageId
            remaining.removeFirst()
            try await database.outboxPrepared(
                clientMessageId: entry.request.clientMessageId, request: message.request, context: message.context, remaining: remaining)
        }
        return message.request
    }

    private func scheduleOutboxWake() async {
        guard !signInRequired else {
            outboxTimer?.cancel()
            outboxTimer = nil
            return
        }
        // Read before cancelling: this may run inside the timer task being replaced, and a
        // cancelled task's database reads throw.
        let next = (try? await database.outboxHeads()).flatMap { schedule.nextWake(of: $0) }
        outboxTimer?.cancel()
        guard let next else {
            outboxTimer = nil
            return
        }
        let delay = max(next.timeIntervalSince(environment.now()), 0)
        outboxTimer = Task { [environment] in
            do { try await environment.sleep(.milliseconds(Int64(delay * 1000) + 1)) } catch { return }
            await self.flushOutbox()
        }
    }

    /// Shows a message that has waited longer than ``sendTimeout`` for its answer as
    /// ``Delivery/notSent``; everything else as it is.
    /// Edits and reactions still on their way are shown as made.
    public func presented(_ messages: [LocalMessage]) -> [LocalMessage] {
        let now = environment.now()
        return overlayPendingRevokes(overlayPendingChanges(messages)).map { message in
            guard message.delivery == .sending, message.deletedAt == nil else { return message }
            let started = sendStartedAt[message.id] ?? message.createdAt
            guard now.timeIntervalSince(started) >= Self.sendTimeout.seconds else { return message }
            var late = message
            late.delivery = .notSent
            return late
        }
    }

    /// "Retry now": every queued message is due at once, the connection is tried again if it
    /// is down, and the outbox is sent.
    public func retryNow() async {
        await makeOutboxDue()
        let now = environment.now()
        for id in sendStartedAt.keys { sendStartedAt[id] = now }
        if machine.state != .connected { run(machine.handle(.retry)) }
        await synchronize()
    }

    /// A new token for the same user (after the app signed them in again): messages kept
    /// while the old one was refused are sent now.
    public func updateToken(_ token: String) async {
        transport.updateToken(token)
        signInRequired = false
        await makeOutboxDue()
        if machine.state != .connected { run(machine.handle(.retry)) }
        await synchronize()
    }

    /// The server refused the token: nothing is marked failed; the app is told to sign in.
    func requireSignIn() {
        guard !signInRequired else { return }
        signInRequired = true
        notify(.signInRequired)
    }

    /// Remembers when a message was handed to the outbox and refreshes its conversation when
    /// it becomes late, so the chat can show it as not sent.
    func watchSend(_ id: String, in conversationId: EntityID) {
        sendStartedAt[id] = environment.now()
        Task { [environment] in
            do { try await environment.sleep(Self.sendTimeout) } catch { return }
            self.notify(.messages(conversationId))
        }
    }
}
