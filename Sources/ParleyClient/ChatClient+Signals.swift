import Foundation
import ParleyProtocol

extension ChatClient {
    // MARK: Typing

    /// Call on every keystroke in a conversation's input: the server hears `true` at once and
    /// then at most every 2 s, and `false` after 2 s without input.
    public func userIsTyping(in conversationId: EntityID) {
        var debouncer = typingOut[conversationId] ?? TypingDebouncer()
        let actions = debouncer.input(at: environment.uptime())
        typingOut[conversationId] = debouncer
        perform(actions, in: conversationId)
    }

    /// Call when the user sends: their typing indicator ends at once.
    public func userSent(in conversationId: EntityID) {
        guard var debouncer = typingOut[conversationId] else { return }
        let actions = debouncer.sent()
        typingOut[conversationId] = debouncer
        perform(actions, in: conversationId)
    }

    private func typingIdleCheck(_ conversationId: EntityID) {
        guard var debouncer = typingOut[conversationId] else { return }
        let actions = debouncer.idle(at: environment.uptime())
        typingOut[conversationId] = debouncer
        perform(actions, in: conversationId)
    }

    private func perform(_ actions: [TypingDebouncer.Action], in conversationId: EntityID) {
        for action in actions {
            switch action {
            case .send(let isTyping):
                // Typing is live-only: with no WebSocket it is dropped, never queued.
                guard let channel, machine.state == .connected else { continue }
                Task { try? await channel.perform(.typing(TypingCommand(conversationId: conversationId, isTyping: isTyping))) }
            case .checkIdle(let at):
                let delay = at - environment.uptime()
                Task { [environment] in
                    try? await environment.sleep(max(delay, .zero))
                    self.typingIdleCheck(conversationId)
                }
            }
        }
    }

    func receivedTyping(_ event: TypingEvent) {
        guard event.userId != userId else { return }
        typingIn.apply(conversation: event.conversationId, user: event.userId, isTyping: event.isTyping, at: environment.uptime())
        notify(.typing(event.conversationId))
        if event.isTyping {
            // Re-announce when it lapses locally, so screens drop a stuck indicator.
            let lifetime = typingIn.lifetime
            Task { [environment] in
                try? await environment.sleep(lifetime)
                self.notify(.typing(event.conversationId))
            }
        }
    }

    /// Who is typing in a conversation now (indicators lapse 5 s after their last `true`).
    public func typingUsers(in conversationId: EntityID) -> [EntityID] {
        typingIn.typing(in: conversationId, at: environment.uptime())
    }

    /// How many members are typing in a large group (its latest `typing.summary`; zero
    /// once it is older than the indicators' lifetime). Smaller conversations: see ``typingUsers(in:)``.
    public func typingCount(in conversationId: EntityID) -> Int {
        guard let latest = typingCounts[conversationId], environment.uptime() - latest.at < typingIn.lifetime else { return 0 }
        return latest.count
    }

    /// How many members of a large group have read and received its newest message (its latest
    /// `receipt.summary`); nil for a conversation that has had none.
    public func receiptSummary(in conversationId: EntityID) -> ReceiptSummaryEvent? {
        receiptSummaries[conversationId]
    }

    // MARK: Receipts

    /// Call as messages become visible: marks are collected for 0.5 s and sent as one read of
    /// the highest seq (queued while offline, sent on reconnect).
    public func markRead(_ conversationId: EntityID, upTo seq: Int64) {
        receipts.markRead(conversationId, upTo: seq)
        scheduleReceipts()
    }

    func markDeliveredUpToSynced(_ conversationId: EntityID) async {
        guard let synced = try? await database.syncedSeq(conversationId), synced > 0 else { return }
        receipts.markDelivered(conversationId, upTo: synced)
        scheduleReceipts()
    }

    private func scheduleReceipts() {
        guard receiptTask == nil else { return }
        let delay = receiptDelay
        receiptTask = Task { [environment] in
            try? await environment.sleep(delay)
            self.receiptTask = nil
            await self.flushReceipts()
        }
    }

    /// Sends what the receipt queue holds; on failure it stays queued (collapsed) for later.
    public func flushReceipts() async {
        guard !receipts.isEmpty else { return }
        let (reads, delivered) = receipts.drain()
        var doneReads: [EntityID: Int64] = [:], doneDelivered: [EntityID: Int64] = [:]
        var failedReads: [EntityID: Int64] = [:], failedDelivered: [EntityID: Int64] = [:]
        for (id, seq) in reads {
            do {
                let answer: ReadResponse
                if let channel, machine.state == .connected {
                    answer = try await channel.read(ReadRequest(conversationId: id, upToSeq: seq))
                } else {
                    answer = try await transport.markRead(id, upToSeq: seq)
                }
                doneReads[id] = seq
                if (try? await database.apply(ownRead: answer, in: id, userId: userId)) == .stale {
                    await refreshListRow(id)
                }
                notify(.conversations)
            } catch let error as ClientError where !error.isTransient {
                doneReads[id] = seq  // refused (e.g. no longer a participant): drop it
            } catch {
                failedReads[id] = seq
            }
        }
        for (id, seq) in delivered {
            do {
                if let channel, machine.state == .connected {
                    try await channel.perform(.delivered(DeliveredCommand(conversationId: id, upToSeq: seq)))
                } else {
                    try await transport.markDelivered(id, upToSeq: seq)
                }
                doneDelivered[id] = seq
            } catch let error as ClientError where !error.isTransient {
                doneDelivered[id] = seq
            } catch {
                failedDelivered[id] = seq
            }
        }
        receipts.acknowledged(read: doneReads, delivered: doneDelivered)
        receipts.requeue(read: failedReads, delivered: failedDelivered)
    }

    // MARK: Directory

    /// Refreshes the cached directory (names and presence). A presence event that arrives while
    /// the list is on its way is newer than the list: it is kept, not overwritten.
    public func refreshDirectory() async throws {
        let asked = presenceSerial
        let users = try await transport.users()
        let fresher = Set(presenceApplied.filter { $0.value > asked }.keys)
        try await database.store(users: users, keepingPresenceOf: fresher)
        notify(.directory)
    }
}

// MARK: Focus

extension ChatClient {
    /// Tells the server which conversation the user is looking at (nil: none), so presence
    /// can say so and push can spare the conversation on screen. Sent now when connected and
    /// again after every reconnect; the last call wins.
    public func focus(_ conversationId: EntityID?) {
        focusedConversation = conversationId
        sendFocus()
    }

    /// Sends the current focus on the live connection, if there is one.
    func sendFocus() {
        guard let channel, machine.state == .connected else { return }
        let command = FocusCommand(conversationId: focusedConversation)
        Task { try? await channel.perform(.focus(command)) }
    }
}
