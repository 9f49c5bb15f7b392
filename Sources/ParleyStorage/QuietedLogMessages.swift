import Logging

/// A log handler that passes every record through, except a few known messages of libraries
/// that are not the operator's concern at their level, which it lowers to debug:
/// - PostgresNIO's warning that a connection was leased before `PostgresClient.run()` began:
///   the store starts `run()` in a task and uses the pool at once, and the lease simply waits
///   for it; every PostgreSQL node logged it at start.
package struct QuietedLogMessages: LogHandler {
    package var wrapped: any LogHandler
    package let messages: Set<String>

    package static let leaseBeforeRun =
        "Trying to lease connection from `PostgresClient`, but `PostgresClient.run()` hasn't been called yet."

    /// A logger that writes where `logger` does, with `messages` lowered to debug.
    package static func quieting(_ messages: Set<String>, in logger: Logger) -> Logger {
        var logger = logger
        logger.handler = QuietedLogMessages(wrapped: logger.handler, messages: messages)
        return logger
    }

    package var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    package var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    package func log(event: LogEvent) {
        var event = event
        if event.level > .debug, messages.contains(event.message.description) { event.level = .debug }
        guard event.level >= wrapped.logLevel else { return }
        wrapped.log(event: event)
    }
}
