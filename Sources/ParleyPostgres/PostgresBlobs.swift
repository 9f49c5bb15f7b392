import Foundation
import Logging
import NIOCore
import PostgresNIO
import ParleyStorage

/// Attachment bytes in PostgreSQL, so every node on the database serves every attachment and
/// an upload begun on one node continues on another: `blobs` has a row per blob with its
/// length, `blob_chunks` its bytes in pieces of at most 256 KiB keyed by their start offset.
/// An append is one transaction that moves the length from `offset` to its new value (a
/// compare-and-set: of two appends at one offset, one wins) and inserts the pieces; a read
/// fetches a few pieces at a time, so neither direction holds a whole file in memory.
///
/// Content that is not in the database but in `fallback` (the data directory of a single node
/// from before attachments moved into PostgreSQL) is still served from there.
package struct PostgresBlobs: AttachmentBlobs {
    package let client: PostgresClient
    package let logger: Logger
    package let fallback: FileBlobs

    /// Blobs in the database of `client`, reading files from before out of `fallback`.
    package init(client: PostgresClient, logger: Logger, fallback: FileBlobs) {
        self.client = client
        self.logger = logger
        self.fallback = fallback
    }
    package static let pieceSize = 256 * 1024
    /// Pieces fetched per query when reading (about 1 MiB).
    package static let piecesPerRead = 4

    package func append(_ bytes: ByteBuffer, to name: String, at offset: Int64) async throws -> Int64 {
        let logger = self.logger
        let count = Int64(bytes.readableBytes)
        return try await client.withConnection { c in
            try await c.inTransaction(logger: logger) { c in
                var moved = try await c.first(
                    "UPDATE blobs SET length = length + \(count) WHERE name = \(name) AND length = \(offset) RETURNING length", logger)
                if moved == nil, offset == 0 {
                    moved = try await c.first(
                        "INSERT INTO blobs (name, length) VALUES (\(name), \(count)) ON CONFLICT DO NOTHING RETURNING length", logger)
                }
                guard let moved else {
                    let actual = try await c.first("SELECT length FROM blobs WHERE name = \(name)", logger)
                    throw BlobError.offsetMismatch(actual: try actual?.decode(Int64.self) ?? 0)
                }
                var rest = bytes
                var start = offset
                while rest.readableBytes > 0 {
                    let piece = rest.readSlice(length: min(Self.pieceSize, rest.readableBytes))!
                    try await c.run("INSERT INTO blob_chunks (name, start, data) VALUES (\(name), \(start), \(piece))", logger)
                    start += Int64(piece.readableBytes)
                }
                return try moved.decode(Int64.self)
            }
        }
    }

    package func length(of name: String) async throws -> Int64? {
        if let length = try await stored(name) { return length }
        return name.hasPrefix("sha256/") ? try await fallback.length(of: name) : nil
    }

    package func read(_ name: String, range: ClosedRange<Int64>?, _ body: (ByteBuffer) async throws -> Void) async throws {
        guard let length = try await stored(name) else {
            guard name.hasPrefix("sha256/") else { throw BlobError.missing }
            return try await fallback.read(name, range: range, body)
        }
        guard length > 0 else { return }
        let first = range?.lowerBound ?? 0, last = min(range?.upperBound ?? length - 1, length - 1)
        var position = first
        let logger = self.logger
        while position <= last {
            // The pieces that overlap [position, last], a few at a time.
            let rows = try await client.withConnection { c in
                try await c.all(
                    """
                    SELECT start, data FROM blob_chunks
                    WHERE name = \(name) AND start <= \(last) AND start + length(data) > \(position)
                    ORDER BY start LIMIT \(Self.piecesPerRead)
                    """, logger)
            }
            guard !rows.isEmpty else { throw BlobError.missing }
            for row in rows {
                let (start, data) = try row.decode((Int64, ByteBuffer).self)
                let from = Int(position - start), to = Int(min(last, start + Int64(data.readableBytes) - 1) - start)
                guard from >= 0, to >= from, let slice = data.getSlice(at: data.readerIndex + from, length: to - from + 1) else {
                    throw BlobError.missing
                }
                try await body(slice)
                position = start + Int64(to) + 1
            }
        }
    }

    private func stored(_ name: String) async throws -> Int64? {
        let logger = self.logger
        return try await client.withConnection { c in
            try await c.first("SELECT length FROM blobs WHERE name = \(name)", logger)?.decode(Int64.self)
        }
    }

    package func move(_ name: String, to target: String) async throws {
        let logger = self.logger
        try await client.withConnection { c in
            try await c.inTransaction(logger: logger) { c in
                let claimed = try await c.first(
                    """
                    INSERT INTO blobs (name, length) SELECT \(target), length FROM blobs WHERE name = \(name)
                    ON CONFLICT DO NOTHING RETURNING length
                    """, logger)
                if claimed != nil {
                    try await c.run("UPDATE blob_chunks SET name = \(target) WHERE name = \(name)", logger)
                } else {
                    try await c.run("DELETE FROM blob_chunks WHERE name = \(name)", logger)
                }
                try await c.run("DELETE FROM blobs WHERE name = \(name)", logger)
            }
        }
    }

    package func remove(_ name: String) async throws {
        let logger = self.logger
        try await client.withConnection { c in
            try await c.inTransaction(logger: logger) { c in
                try await c.run("DELETE FROM blob_chunks WHERE name = \(name)", logger)
                try await c.run("DELETE FROM blobs WHERE name = \(name)", logger)
            }
        }
    }
}
