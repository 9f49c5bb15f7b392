import Foundation
import GRDBSQLite
#if canImport(Glibc)
import Glibc
import ParleyStorage
#endif

/// Where a server's memory goes, for `/metrics` and `bench soak`: SQLite's own allocations, and
/// what the C allocator holds, so a resident size that grows can be told apart as SQLite's page
/// caches filling (bounded by each connection's `cache_size`), live objects of our own, or
/// memory freed but kept by the allocator.
public enum ProcessMemory {
    /// Bytes SQLite has allocated and not freed, over every connection of the process (its
    /// page caches, prepared statements and schemas): `sqlite3_memory_used`.
    public static var sqliteBytes: Int { Int(sqlite3_memory_used()) }

    /// glibc's allocator: bytes handed out and not freed (arenas and mmap), and bytes freed but
    /// kept in its arenas. Nil where there is no glibc. Read from `malloc_info`'s totals (its
    /// `mallinfo2` returns a struct Swift cannot take from a C function pointer); a walk of the
    /// arenas' free lists, so for a scrape, not a hot path.
    public static var allocator: (inUse: Int, freeKept: Int)? {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_info") else { return nil }
        typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
        let mallocInfo = unsafeBitCast(symbol, to: MallocInfo.self)
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { return nil }
        let status = mallocInfo(0, stream)
        fclose(stream)
        defer { free(buffer) }
        guard status == 0, let buffer else { return nil }
        return totals(String(cString: buffer))
        #else
        return nil
        #endif
    }

    /// In use and free-kept bytes from `malloc_info`'s XML: the last `<total>` lines (all
    /// arenas) give the free chunks and the mmapped blocks, `<system type="current">` what the
    /// arenas took from the system.
    package static func totals(_ xml: String) -> (inUse: Int, freeKept: Int)? {
        var free = 0, mmapped = 0, system: Int?
        // The process-wide totals follow the last </heap>.
        let tail = xml.range(of: "</heap>", options: .backwards).map { String(xml[$0.upperBound...]) } ?? xml
        for line in tail.split(separator: "\n") {
            guard let size = attribute("size", in: line) else { continue }
            if line.contains("<total type=\"fast\"") || line.contains("<total type=\"rest\"") { free += size }
            if line.contains("<total type=\"mmap\"") { mmapped = size }
            if line.contains("<system type=\"current\"") { system = size }
        }
        guard let system else { return nil }
        return (system - free + mmapped, free)
    }

    private static func attribute(_ name: String, in line: Substring) -> Int? {
        guard let start = line.range(of: "\(name)=\"") else { return nil }
        return Int(line[start.upperBound...].prefix { $0 != "\"" })
    }
}
