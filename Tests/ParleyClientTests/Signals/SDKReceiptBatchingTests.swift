import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Read and delivered receipts as the SDK batches them: one per conversation per flush, never a
/// lower seq after a higher one, nothing lost when a send fails, nothing sent twice. The queue
/// is pure; these tests play the client's flush loop (drain, send, acknowledge or requeue).
@Suite struct SDKReceiptBatchingTests {
    /// Many "visible" marks while scrolling become one read of the highest seq per conversation,
    /// not one request per message.
    @Test func aScrollOfManyMarksIsOneReadPerConversation() {
        let conversations = (0..<5).map { _ in EntityID() }
        var queue = ReceiptQueue()
        var random = SeededGenerator(seed: 5)
        var highest: [EntityID: Int64] = [:]
        for _ in 0..<1000 {
            let id = conversations.randomElement(using: &random)!
            let seq = Int64.random(in: 1...400, using: &random)
            queue.markRead(id, upTo: seq)
            highest[id] = max(highest[id] ?? 0, seq)
        }
        let batch = queue.drain()
        #expect(batch.read == highest)
        #expect(batch.delivered.isEmpty)
        #expect(queue.isEmpty)
        #expect(queue.drain().read.isEmpty, "a second drain sends nothing")
    }

    /// Marks made while a batch is on its way, at or below what that batch carries, must not be
    /// sent after it: the server would get read 5 after read 7 (a wasted request per scroll, and
    /// on a server that trusted order, a badge moving back).
    @Test func marksAtOrBelowAnInFlightReadAreNotSentAfterIt() {
        let id = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(id, upTo: 7)
        queue.markDelivered(id, upTo: 9)
        let inFlight = queue.drain()
        #expect(inFlight.read == [id: 7] && inFlight.delivered == [id: 9])
        // While the request is on its way the screen reports older rows as visible again.
        queue.markRead(id, upTo: 5)
        queue.markRead(id, upTo: 7)
        queue.markDelivered(id, upTo: 8)
        queue.acknowledged(read: inFlight.read, delivered: inFlight.delivered)
        let next = queue.drain()
        #expect(next.read == [:], "read 5 or 7 after read 7 was acknowledged")
        #expect(next.delivered == [:], "delivered 8 after delivered 9 was acknowledged")
        #expect(queue.isEmpty)
    }

    /// A mark above the in-flight one made meanwhile is kept and sent next, alone.
    @Test func aHigherMarkDuringFlightIsSentNext() {
        let id = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(id, upTo: 7)
        let inFlight = queue.drain()
        queue.markRead(id, upTo: 12)
        queue.acknowledged(read: inFlight.read, delivered: inFlight.delivered)
        #expect(queue.drain().read == [id: 12])
    }

    /// A failed send is requeued and collapses with marks made meanwhile: the highest wins,
    /// whichever came first.
    @Test(arguments: [(Int64(7), Int64(4), Int64(7)), (7, 9, 9), (7, 7, 7)])
    func aFailedBatchCollapsesWithNewerMarks(failed: Int64, meanwhile: Int64, expected: Int64) {
        let id = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(id, upTo: failed)
        let batch = queue.drain()
        queue.markRead(id, upTo: meanwhile)
        queue.requeue(read: batch.read, delivered: batch.delivered)
        #expect(queue.drain().read == [id: expected])
    }

    /// A read implies delivered: a delivered at or below the read in the same batch is not sent
    /// (one request, not two); a delivered above it still is.
    @Test(arguments: [(Int64(5), Int64(3), false), (5, 5, false), (5, 6, true)])
    func readCoversDeliveredInTheSameBatch(read: Int64, delivered: Int64, deliveredSent: Bool) {
        let id = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(id, upTo: read)
        queue.markDelivered(id, upTo: delivered)
        let batch = queue.drain()
        #expect(batch.read == [id: read])
        #expect(batch.delivered == (deliveredSent ? [id: delivered] : [:]))
    }

    /// An acknowledged read also acknowledges delivery up to it: a later delivered mark at or
    /// below it is never sent.
    @Test func anAcknowledgedReadSuppressesLowerDeliveredMarks() {
        let id = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(id, upTo: 10)
        let batch = queue.drain()
        queue.acknowledged(read: batch.read, delivered: batch.delivered)
        queue.markDelivered(id, upTo: 10)
        queue.markDelivered(id, upTo: 3)
        #expect(queue.isEmpty)
        queue.markDelivered(id, upTo: 11)
        #expect(queue.drain().delivered == [id: 11])
    }

    /// Zero and negative seqs (an empty conversation) are never sent.
    @Test func nothingToMarkSendsNothing() {
        let id = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(id, upTo: 0)
        queue.markDelivered(id, upTo: -1)
        #expect(queue.isEmpty)
    }

    /// Conversations are independent: acknowledging one does not swallow another's marks.
    @Test func acknowledgingOneConversationLeavesOthersQueued() {
        let one = EntityID(), two = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(one, upTo: 4)
        let batch = queue.drain()
        queue.markRead(two, upTo: 2)
        queue.markRead(one, upTo: 3)
        queue.acknowledged(read: batch.read, delivered: batch.delivered)
        #expect(queue.drain().read == [two: 2])
    }

    /// The client's whole loop, seeded: marks arrive at random, flushes go out one at a time,
    /// succeed, fail (requeue) or are refused (acknowledged and dropped), with marks made while
    /// a flush is in flight. Whatever the order:
    /// - every read sent for a conversation is above every read the server already took, and
    ///   every delivered above every delivered or read it took (never lower after higher);
    /// - a batch carries at most one read and one delivered per conversation;
    /// - when the network is good at the end, the server holds exactly the highest mark.
    @Test(arguments: [UInt64(1), 2, 3, 17, 99, 512])
    func theFlushLoopNeverSendsLowerAfterHigherAndLosesNothing(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let conversations = (0..<3).map { _ in EntityID() }
        var queue = ReceiptQueue()
        var serverRead: [EntityID: Int64] = [:]
        var serverDelivered: [EntityID: Int64] = [:]
        var markedRead: [EntityID: Int64] = [:]
        var markedDelivered: [EntityID: Int64] = [:]
        var inFlight: (read: [EntityID: Int64], delivered: [EntityID: Int64])?
        var sentRequests = 0

        func mark() {
            let id = conversations.randomElement(using: &random)!
            let seq = Int64.random(in: 1...60, using: &random)
            if Bool.random(using: &random) {
                queue.markRead(id, upTo: seq)
                markedRead[id] = max(markedRead[id] ?? 0, seq)
            } else {
                queue.markDelivered(id, upTo: seq)
                markedDelivered[id] = max(markedDelivered[id] ?? 0, seq)
            }
        }

        func send(_ batch: (read: [EntityID: Int64], delivered: [EntityID: Int64])) {
            for (id, seq) in batch.read {
                #expect(seq > (serverRead[id] ?? 0), "seed \(seed): read \(seq) sent after the server took \(serverRead[id] ?? 0)")
            }
            for (id, seq) in batch.delivered {
                let known = max(serverDelivered[id] ?? 0, serverRead[id] ?? 0)
                #expect(seq > known, "seed \(seed): delivered \(seq) sent after the server took \(known)")
            }
            sentRequests += batch.read.count + batch.delivered.count
        }

        func answer(success: Bool) {
            guard let batch = inFlight else { return }
            inFlight = nil
            if success {
                for (id, seq) in batch.read { serverRead[id] = max(serverRead[id] ?? 0, seq) }
                for (id, seq) in batch.delivered { serverDelivered[id] = max(serverDelivered[id] ?? 0, seq) }
                queue.acknowledged(read: batch.read, delivered: batch.delivered)
            } else {
                queue.requeue(read: batch.read, delivered: batch.delivered)
            }
        }

        for _ in 0..<400 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6: mark()
            case 6, 7:
                if inFlight == nil, !queue.isEmpty {
                    let batch = queue.drain()
                    send(batch)
                    inFlight = batch
                }
            default: answer(success: Int.random(in: 0..<3, using: &random) > 0)
            }
        }
        // The network is good again: everything goes.
        answer(success: true)
        while !queue.isEmpty {
            let batch = queue.drain()
            send(batch)
            inFlight = batch
            answer(success: true)
        }
        #expect(serverRead == markedRead, "seed \(seed)")
        for id in conversations {
            let expected = max(markedDelivered[id] ?? 0, markedRead[id] ?? 0)
            let held = max(serverDelivered[id] ?? 0, serverRead[id] ?? 0)
            #expect(held == expected, "seed \(seed): delivered")
        }
        #expect(sentRequests < 400, "batched, not one request per mark")
    }
}
