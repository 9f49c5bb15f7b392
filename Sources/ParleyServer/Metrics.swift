import Foundation
import Synchronization

/// Named counters the server keeps (push outcomes, dropped notifications, ...), exposed in the
/// Prometheus text format at `GET /metrics`. Counting is a lock and an add: nothing on a hot
/// path waits for it.
public final class Metrics: Sendable {
    private let counters = Mutex<[String: Int]>([:])
    private let gauges = Mutex<Set<String>>([])

    /// An empty registry.
    public init() {}

    /// Adds to a counter; `name` is a Prometheus metric name, `labels` its label pairs.
    public func increment(_ name: String, labels: KeyValuePairs<String, String> = [:], by amount: Int = 1) {
        let key = Self.key(name, labels)
        counters.withLock { $0[key, default: 0] += amount }
    }

    /// Sets a gauge (a value that goes up and down, such as whether storage is available).
    public func set(_ name: String, labels: KeyValuePairs<String, String> = [:], to value: Int) {
        let key = Self.key(name, labels)
        gauges.withLock { _ = $0.insert(name) }
        counters.withLock { $0[key] = value }
    }

    /// A counter's value (0 when it was never counted).
    public func value(_ name: String, labels: KeyValuePairs<String, String> = [:]) -> Int {
        let key = Self.key(name, labels)
        return counters.withLock { $0[key] ?? 0 }
    }

    /// Every counter and gauge, one `name{labels} value` line each, sorted.
    public func prometheusText() -> String {
        let snapshot = counters.withLock { $0 }
        let gaugeNames = gauges.withLock { $0 }
        var names = Set<String>()
        var lines: [String] = []
        for (key, value) in snapshot.sorted(by: { $0.key < $1.key }) {
            let name = String(key.prefix { $0 != "{" })
            if names.insert(name).inserted { lines.append("# TYPE \(name) \(gaugeNames.contains(name) ? "gauge" : "counter")") }
            lines.append("\(key) \(value)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func key(_ name: String, _ labels: KeyValuePairs<String, String>) -> String {
        guard !labels.isEmpty else { return name }
        let pairs = labels.map { "\($0.key)=\"\($0.value.replacingOccurrences(of: "\"", with: "'"))\"" }
        return "\(name){\(pairs.joined(separator: ","))}"
    }
}
