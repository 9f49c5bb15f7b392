import Foundation
import Logging
import OTel
import ParleyServer
import ServiceLifecycle
import Tracing

/// The exporter behind `parley serve --tracing otlp`: spans batched and sent over OTLP/HTTP
/// (protobuf, or JSON with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) to the collector the
/// standard `OTEL_*` variables name.
struct SpanExport {
    /// Runs beside the server (batches, exports, flushes at shutdown).
    let service: any Service
    /// Puts the current span's `trace_id` and `span_id` into every log line.
    let metadataProvider: Logger.MetadataProvider

    /// Bootstraps the process's tracer and turns the server's spans on.
    static func start(_ configuration: ServerConfiguration) throws -> SpanExport {
        var otel = OTel.Configuration.default
        otel.serviceName = "parley"
        if let node = configuration.cluster?.nodeId { otel.resourceAttributes["service.instance.id"] = node }
        otel.traces.exporter = .otlp
        otel.traces.otlpExporter.protocol = .httpProtobuf
        otel.metrics.enabled = false
        otel.logs.enabled = false
        // The OTEL_* variables (endpoint, protocol, headers, sampler, batch delay) apply over these.
        let backend = try OTel.makeTracingBackend(configuration: otel)
        InstrumentationSystem.bootstrap(backend.factory)
        ServerTracing.enable()
        return SpanExport(service: backend.service, metadataProvider: OTel.makeLoggingMetadataProvider())
    }
}
