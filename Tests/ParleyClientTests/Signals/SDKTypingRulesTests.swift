import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// "Typing…" that never goes away, or that flickers on every keystroke: the outgoing debounce
/// and the incoming indicators, driven by explicit times (the shell's timers are simulated by
/// calling `idle(at:)` when each requested check comes due).
@Suite struct SDKTypingRulesTests {
    /// Plays keystrokes and sends through a debouncer the way ChatClient does: every
    /// `checkIdle(at:)` arms a timer that calls `idle(at:)` at that time. Returns what was sent,
    /// with the time it was sent.
    static func play(
        keystrokes: [Duration], sends: Set<Duration> = [], interval: Duration = .seconds(2), until end: Duration
    ) -> (sent: [(at: Duration, isTyping: Bool)], debouncer: TypingDebouncer) {
        var debouncer = TypingDebouncer(interval: interval)
        var timers: [Duration] = []
        var sent: [(at: Duration, isTyping: Bool)] = []
        func perform(_ actions: [TypingDebouncer.Action], at now: Duration) {
            for action in actions {
                switch action {
                case .send(let isTyping): sent.append((now, isTyping))
                case .checkIdle(let at):
                    #expect(at >= now, "a check is never asked for in the past")
                    timers.append(at)
                }
            }
        }
        var inputs = keystrokes.map { ($0, false) } + sends.map { ($0, true) }
        inputs.sort { $0.0 < $1.0 }
        var index = 0
        while true {
            let nextTimer = timers.min()
            let nextInput = index < inputs.count ? inputs[index].0 : nil
            if let timer = nextTimer, nextInput.map({ timer < $0 }) ?? true, timer <= end {
                timers.remove(at: timers.firstIndex(of: timer)!)
                perform(debouncer.idle(at: timer), at: timer)
            } else if let input = nextInput, input <= end {
                perform(inputs[index].1 ? debouncer.sent() : debouncer.input(at: input), at: input)
                index += 1
            } else {
                break
            }
        }
        return (sent, debouncer)
    }

    /// After the last keystroke, `false` goes out exactly one interval later, whatever the
    /// rhythm before it: typing is never left on for the others.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func typingAlwaysStopsOneIntervalAfterTheLastKeystroke(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var now = Duration.seconds(100)
        var keystrokes: [Duration] = []
        for _ in 0..<Int.random(in: 1...200, using: &random) {
            // Mostly quick typing, sometimes a pause longer than the interval.
            let gap = Int.random(in: 0..<10, using: &random) == 0
                ? Int64.random(in: 2001...6000, using: &random) : Int64.random(in: 0...900, using: &random)
            now += .milliseconds(gap)
            keystrokes.append(now)
        }
        let last = keystrokes.last!
        let (sent, debouncer) = Self.play(keystrokes: keystrokes, until: last + .seconds(60))
        #expect(!debouncer.isTyping, "seed \(seed): still typing at the end")
        #expect(sent.last?.isTyping == false)
        #expect(sent.last?.at == last + .seconds(2), "seed \(seed): false at \(String(describing: sent.last?.at)), last key \(last)")
        // Sends never repeat `false`, and never say `false` before a `true`.
        var typing = false
        for send in sent {
            if !send.isTyping { #expect(typing, "seed \(seed): false while not typing") }
            typing = send.isTyping
        }
        // Each pause of at least the interval shows up as a `false` inside it.
        for (before, after) in zip(keystrokes, keystrokes.dropFirst()) where after - before > .seconds(2) {
            #expect(sent.contains { !$0.isTyping && $0.at == before + .seconds(2) }, "seed \(seed): pause after \(before)")
        }
    }

    /// While typing goes on, `true` is repeated no more often than every interval (not once per
    /// keystroke) and no less (the others' indicators lapse after 5 s without it).
    @Test(arguments: [UInt64(10), 20, 30])
    func trueIsRepeatedAboutEveryIntervalWhileTyping(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var now = Duration.zero
        var keystrokes: [Duration] = []
        for _ in 0..<300 {
            now += .milliseconds(Int64.random(in: 50...400, using: &random))
            keystrokes.append(now)
        }
        let (sent, _) = Self.play(keystrokes: keystrokes, until: now + .seconds(10))
        let trues = sent.filter(\.isTyping).map(\.at)
        #expect(trues.count >= 2)
        for (a, b) in zip(trues, trues.dropFirst()) {
            #expect(b - a >= .seconds(2), "seed \(seed): trues \(a) and \(b) too close")
            #expect(b - a < .milliseconds(2400), "seed \(seed): a gap of \(b - a) lets the others' indicator go stale")
        }
        #expect(sent.filter { !$0.isTyping }.count == 1, "one false, at the end")
        #expect(trues.count < keystrokes.count / 4)
    }

    /// Sending ends typing at once; the timer still pending from the last keystroke then finds
    /// nothing to do (no second `false`), and the next keystroke starts a new `true` at once.
    @Test func sendingStopsTypingAndTheOldTimerIsHarmless() {
        let (sent, debouncer) = Self.play(
            keystrokes: [.seconds(1), .milliseconds(1500), .milliseconds(3200)], sends: [.milliseconds(1600)], until: .seconds(20))
        #expect(sent.map(\.isTyping) == [true, false, true, false])
        #expect(sent.map(\.at) == [.seconds(1), .milliseconds(1600), .milliseconds(3200), .milliseconds(5200)])
        #expect(!debouncer.isTyping)
    }

    /// A timer that fires late (the app was suspended) ends typing when it finally fires, with one
    /// `false`, and a keystroke after a long gap sends `true` again at once.
    @Test func aLateTimerAndALongGapBehave() {
        var debouncer = TypingDebouncer()
        #expect(debouncer.input(at: .seconds(10)) == [.send(isTyping: true), .checkIdle(at: .seconds(12))])
        #expect(debouncer.idle(at: .seconds(90)) == [.send(isTyping: false)])
        #expect(debouncer.idle(at: .seconds(91)) == [])
        #expect(debouncer.input(at: .seconds(95)) == [.send(isTyping: true), .checkIdle(at: .seconds(97))])
        // Still "typing" because the timer never ran: a keystroke much later re-announces.
        #expect(debouncer.input(at: .seconds(200)) == [.send(isTyping: true), .checkIdle(at: .seconds(202))])
    }

    /// Custom intervals are honoured for both the repeat and the pause.
    @Test func aCustomIntervalDrivesBothRepeatAndPause() {
        var debouncer = TypingDebouncer(interval: .milliseconds(500))
        #expect(debouncer.input(at: .zero) == [.send(isTyping: true), .checkIdle(at: .milliseconds(500))])
        #expect(debouncer.input(at: .milliseconds(499)) == [.checkIdle(at: .milliseconds(999))])
        #expect(debouncer.input(at: .milliseconds(500)) == [.send(isTyping: true), .checkIdle(at: .seconds(1))])
        #expect(debouncer.idle(at: .milliseconds(999)) == [.checkIdle(at: .seconds(1))])
        #expect(debouncer.idle(at: .seconds(1)) == [.send(isTyping: false)])
    }

    /// Another person's indicator lapses exactly `lifetime` after their last `true` when the
    /// `false` is lost, and each new `true` extends it.
    @Test func incomingIndicatorsLapseExactlyAndExtend() {
        let room = EntityID(), ada = EntityID()
        var indicators = TypingIndicators(lifetime: .seconds(5))
        indicators.apply(conversation: room, user: ada, isTyping: true, at: .seconds(10))
        indicators.apply(conversation: room, user: ada, isTyping: true, at: .seconds(13))
        #expect(indicators.typing(in: room, at: .milliseconds(17_999)) == [ada])
        #expect(indicators.typing(in: room, at: .seconds(18)) == [], "5 s after the last true")
        // A `false` for someone who is not shown, or in another room, changes nothing else.
        indicators.apply(conversation: room, user: ada, isTyping: true, at: .seconds(20))
        indicators.apply(conversation: EntityID(), user: ada, isTyping: false, at: .seconds(21))
        indicators.apply(conversation: room, user: EntityID(), isTyping: false, at: .seconds(21))
        #expect(indicators.typing(in: room, at: .seconds(21)) == [ada])
        // Their message arrived: cleared at once.
        indicators.clear(conversation: room, user: ada)
        #expect(indicators.typing(in: room, at: .seconds(21)) == [])
    }

    /// The list of typists is in a stable order (sorted ids) whatever the arrival order, so the
    /// typing line does not reshuffle on every event.
    @Test func typistsComeInAStableOrder() {
        let room = EntityID()
        let users = (0..<6).map { _ in EntityID() }
        var forward = TypingIndicators(), backward = TypingIndicators()
        for (index, user) in users.enumerated() {
            forward.apply(conversation: room, user: user, isTyping: true, at: .seconds(Int64(index)))
        }
        for (index, user) in users.reversed().enumerated() {
            backward.apply(conversation: room, user: user, isTyping: true, at: .seconds(Int64(index)))
        }
        #expect(forward.typing(in: room, at: .milliseconds(4500)) == users.sorted())
        #expect(backward.typing(in: room, at: .milliseconds(4500)) == users.sorted())
        // At 5.5 s the first true of each has lapsed.
        #expect(forward.typing(in: room, at: .milliseconds(5500)) == Array(users.dropFirst()).sorted())
        #expect(backward.typing(in: room, at: .milliseconds(5500)) == Array(users.dropLast()).sorted())
    }

    /// Seeded stream of indicator events for several rooms and people, compared with a
    /// brute-force model: a person shows as typing iff their latest event in that room was a
    /// `true` less than `lifetime` ago.
    @Test(arguments: [UInt64(3), 33, 333])
    func indicatorsMatchABruteForceModel(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let rooms = (0..<3).map { _ in EntityID() }
        let people = (0..<4).map { _ in EntityID() }
        var indicators = TypingIndicators(lifetime: .seconds(5))
        var latest: [String: (at: Duration, isTyping: Bool)] = [:]
        var now = Duration.zero
        for _ in 0..<500 {
            now += .milliseconds(Int64.random(in: 0...2500, using: &random))
            let room = rooms.randomElement(using: &random)!, person = people.randomElement(using: &random)!
            let isTyping = Int.random(in: 0..<4, using: &random) > 0
            indicators.apply(conversation: room, user: person, isTyping: isTyping, at: now)
            latest["\(room)/\(person)"] = (now, isTyping)
            let probe = now + .milliseconds(Int64.random(in: 0...6000, using: &random))
            for check in rooms {
                let expected = people.filter { person in
                    guard let event = latest["\(check)/\(person)"], event.isTyping else { return false }
                    return probe < event.at + .seconds(5)
                }.sorted()
                #expect(indicators.typing(in: check, at: probe) == expected, "seed \(seed)")
            }
        }
    }

    /// The typing line for every count, with names in the order given.
    @Test(arguments: [
        ([String](), nil as String?), (["Ada"], "Ada is typing…"), (["Ada", "Bob"], "Ada and Bob are typing…"),
        (["Ada", "Bob", "Cy"], "Ada, Bob and Cy are typing…"), (["Ada", "Bob", "Cy", "Di"], "Ada, Bob and 2 others are typing…"),
        (Array(repeating: "X", count: 12), "X, X and 10 others are typing…"),
    ])
    func typingLineForEveryCount(names: [String], line: String?) {
        #expect(TypingIndicators.line(for: names) == line)
        #expect(ChatPresentation.typingLine(names) == line)
    }
}
