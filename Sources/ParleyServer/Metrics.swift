import CoreMetrics
import Foundation
import Prometheus
import Synchronization

/// The server's metrics, on swift-metrics with swift-prometheus, exposed in the Prometheus text
/// format at `GET /metrics`: counters, gauges and histograms (durations in seconds).
///
/// Each server (tests run several in one process) has its own registry and factory, passed to
/// swift-metrics' `Counter`, `Gauge`, `Timer` and `Recorder` explicitly rather than through the
/// process-wide bootstrap. Recording is a lookup under a lock and an atomic add: nothing on a
/// hot path waits for it.
public final class Metrics: Sendable {
    /// The Prometheus registry behind every metric.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let counters = Mutex<[String: (metric: CoreMetrics.Counter, value: Int)]>([:])
    private let gauges = Mutex<[String: (metric: CoreMetrics.Gauge, value: Double)]>([:])
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])
    private let recorders = Mutex<[String: CoreMetrics.Recorder]>([:])

    /// Buckets for durations: from a tenth of a millisecond (a commit on a quiet disk) to ten
    /// seconds (a stalled store).
    static let durationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2.5), .seconds(10),
    ]

    /// An empty registry.
    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.durationBuckets
        factory.defaultValueHistogramBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
        self.factory = factory
    }

    /// Adds to a counter; `name` is a Prometheus metric name, `labels` its label pairs (one name
    /// always has the same label names).
    public func increment(_ name: String, labels: KeyValuePairs<String, String> = [:], by amount: Int = 1) {
        let key = Self.key(name, labels)
        let counter = counters.withLock { counters -> CoreMetrics.Counter in
            if var entry = counters[key] {
                entry.value += amount
                counters[key] = entry
                return entry.metric
            }
            let metric = CoreMetrics.Counter(label: name, dimensions: labels.map { ($0.key, $0.value) }, factory: factory)
            counters[key] = (metric, amount)
            return metric
        }
        counter.increment(by: amount)
    }

    /// Sets a gauge (a value that goes up and down: connections, queue depth, storage up).
    public func set(_ name: String, labels: KeyValuePairs<String, String> = [:], to value: Double) {
        let key = Self.key(name, labels)
        let gauge = gauges.withLock { gauges -> CoreMetrics.Gauge in
            let metric = gauges[key]?.metric
                ?? CoreMetrics.Gauge(label: name, dimensions: labels.map { ($0.key, $0.value) }, factory: factory)
            gauges[key] = (metric, value)
            return metric
        }
        gauge.record(value)
    }

    /// Sets a gauge to a whole number.
    public func set(_ name: String, labels: KeyValuePairs<String, String> = [:], to value: Int) {
        set(name, labels: labels, to: Double(value))
    }

    /// Records a duration into a histogram (seconds in the exposition).
    public func observe(_ name: String, labels: KeyValuePairs<String, String> = [:], duration: Duration) {
        let key = Self.key(name, labels)
        let timer = timers.withLock { timers -> CoreMetrics.Timer in
            if let timer = timers[key] { return timer }
            let timer = CoreMetrics.Timer(label: name, dimensions: labels.map { ($0.key, $0.value) }, factory: factory)
            timers[key] = timer
            return timer
        }
        let (seconds, attoseconds) = duration.components
        timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Records a value (a batch size) into a histogram.
    public func observe(_ name: String, labels: KeyValuePairs<String, String> = [:], value: Double) {
        let key = Self.key(name, labels)
        let recorder = recorders.withLock { recorders -> CoreMetrics.Recorder in
            if let recorder = recorders[key] { return recorder }
            let recorder = CoreMetrics.Recorder(
                label: name, dimensions: labels.map { ($0.key, $0.value) }, aggregate: true, factory: factory)
            recorders[key] = recorder
            return recorder
        }
        recorder.record(value)
    }

    /// A counter's value, or a gauge's (0 when never recorded).
    public func value(_ name: String, labels: KeyValuePairs<String, String> = [:]) -> Int {
        let key = Self.key(name, labels)
        if let counted = counters.withLock({ $0[key]?.value }) { return counted }
        return gauges.withLock { $0[key].map { Int($0.value) } } ?? 0
    }

    /// Everything, in the Prometheus text format.
    public func prometheusText() -> String { registry.emitToString() }

    private static func key(_ name: String, _ labels: KeyValuePairs<String, String>) -> String {
        guard !labels.isEmpty else { return name }
        return name + "{" + labels.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
    }
}
