import Foundation
import ParleyStorage
import Synchronization
import Tracing

/// A message's path as spans: the command that sent it, the rules, the commit (with the
/// transaction it rode in), the fan-out, and the relay that carries it to another node.
///
/// Off unless `parley serve` is started with tracing (see `--tracing`): it bootstraps
/// `InstrumentationSystem` with an exporter and then calls ``enable()``. While off, a send pays
/// one relaxed atomic load per check and makes no span, no context and no header.
public enum ServerTracing {
    private static let on = Atomic<Bool>(false)

    /// Whether this process records spans.
    public static var isEnabled: Bool { on.load(ordering: .relaxed) }

    /// Turns spans on for this process. Call once, after `InstrumentationSystem.bootstrap`,
    /// before the server starts.
    public static func enable() {
        on.store(true, ordering: .relaxed)
        WriteTrace.enabled = true
    }

    /// A span started now (or `at`) under `context` (the current task's, or a top-level one), or nil
    /// while tracing is off.
    static func start(
        _ name: @autoclosure () -> String, kind: SpanKind = .internal, context: ServiceContext? = nil, at instant: WallInstant? = nil
    ) -> (any Span)? {
        guard isEnabled else { return nil }
        let parent = context ?? ServiceContext.current ?? .topLevel
        if let instant {
            return InstrumentationSystem.tracer.startSpan(name(), context: parent, ofKind: kind, at: instant)
        }
        return InstrumentationSystem.tracer.startSpan(name(), context: parent, ofKind: kind)
    }

    /// Runs `body` with `span` as the current task's span (as is, when there is none).
    static func within<T>(_ span: (any Span)?, _ body: () throws -> T) rethrows -> T {
        guard let span else { return try body() }
        return try ServiceContext.$current.withValue(span.context) { try body() }
    }

    /// Runs `body` with `span` as the current task's span (as is, when there is none).
    static func within<T>(_ span: (any Span)?, _ body: () async throws -> T) async rethrows -> T {
        guard let span else { return try await body() }
        return try await ServiceContext.$current.withValue(span.context) { try await body() }
    }

    /// Marks the span failed with the error, then ends it.
    static func fail(_ span: (any Span)?, _ error: any Error) {
        guard let span else { return }
        span.recordError(error)
        span.setStatus(SpanStatus(code: .error))
        span.end()
    }

    /// The W3C `traceparent` of the current task's span, to carry to another node; nil while
    /// tracing is off or outside any span.
    static func currentTraceparent() -> String? {
        guard isEnabled, let context = ServiceContext.current else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: HeaderInjector())
        return carrier["traceparent"]
    }

    /// The context a `traceparent` from another node stands for (a top-level one if it does not parse).
    static func context(traceparent: String) -> ServiceContext {
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(["traceparent": traceparent], into: &context, using: HeaderExtractor())
        return context
    }

    /// The span of a queued write's commit, from when it was queued to its answer, with the
    /// transaction it rode in and its rule's run inside it as a child span.
    static func recordCommit(_ span: (any Span)?, of trace: WriteTrace?, rule: String) {
        guard let span else { return }
        if let batch = trace?.batch {
            span.attributes["parley.commit.batch"] = batch.number
            span.attributes["parley.commit.batch_size"] = batch.size
            span.attributes["parley.commit.transaction_us"] = Int((batch.committedAt &- batch.startedAt) / 1000)
        }
        if let ran = trace?.ran, let child = start(rule, context: span.context, at: WallInstant(ran.start)) {
            child.end(at: WallInstant(ran.end))
        }
        span.end()
    }
}

/// An instant as spans take it: nanoseconds since 1970.
struct WallInstant: TracerInstant {
    let nanosecondsSinceEpoch: UInt64
    init(_ nanoseconds: UInt64) { nanosecondsSinceEpoch = nanoseconds }
    static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch }
}

/// Writes a propagated context's fields into a header dictionary.
struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

/// Reads a propagated context's fields from a header dictionary.
struct HeaderExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
