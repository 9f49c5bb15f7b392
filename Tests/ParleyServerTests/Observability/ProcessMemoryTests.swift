import ParleyStorage
import Testing
import ParleySQLite

/// Reading glibc's `malloc_info`: the process-wide totals after the last heap, not one arena's.
@Suite struct ProcessMemoryTests {
    @Test func theTotalsAfterTheLastHeapAreRead() throws {
        let xml = """
            <malloc version="1">
            <heap nr="0">
            <sizes>
            </sizes>
            <total type="fast" count="1" size="32"/>
            <total type="rest" count="2" size="1000"/>
            <system type="current" size="50000"/>
            <system type="max" size="50000"/>
            </heap>
            <heap nr="1">
            <total type="fast" count="0" size="0"/>
            <total type="rest" count="1" size="500"/>
            <system type="current" size="20000"/>
            </heap>
            <total type="fast" count="1" size="32"/>
            <total type="rest" count="3" size="1500"/>
            <total type="mmap" count="2" size="300000"/>
            <system type="current" size="70000"/>
            <system type="max" size="80000"/>
            <aspace type="total" size="70000"/>
            </malloc>
            """
        let totals = try #require(ProcessMemory.totals(xml))
        #expect(totals.freeKept == 1532)
        #expect(totals.inUse == 70000 - 1532 + 300000)
        #expect(ProcessMemory.totals("<malloc></malloc>") == nil)
    }

    #if os(Linux)
    @Test func thisProcessHasAHeapAndSQLiteMemoryIsCounted() throws {
        let heap = try #require(ProcessMemory.allocator)
        #expect(heap.inUse > 0 && heap.freeKept >= 0)
        #expect(ProcessMemory.sqliteBytes >= 0)
    }
    #endif
}
