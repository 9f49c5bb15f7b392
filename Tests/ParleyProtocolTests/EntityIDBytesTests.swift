import Foundation
import ParleyProtocol
import Testing

/// `EntityID(utf8:)` reads an id from a slice of a larger text in place (the cluster's records
/// hold lists of them), with exactly the rules of `EntityID(_:)`.
@Suite struct EntityIDBytesTests {
    @Test func aSliceOfALargerTextParsesAsTheWholeStringDoes() throws {
        let ids = (0..<5).map { _ in EntityID() }
        let line = "Q node " + ids.map(\.description).joined(separator: ",") + " {\"x\":1}"
        let list = try #require(line.utf8.split(separator: UInt8(ascii: " "))[safe: 2])
        let parsed = list.split(separator: UInt8(ascii: ",")).map { EntityID(utf8: $0) }
        #expect(parsed == ids)
        #expect(EntityID(utf8: ids[0].description.uppercased().utf8) == ids[0])
    }

    @Test(arguments: [
        "", "123", "00000000-0000-0000-0000-00000000000", "00000000-0000-0000-0000-0000000000000",
        "00000000-0000-0000-0000-0000000000001", "00000000x0000-0000-0000-000000000000", "0000000-00000-0000-0000-000000000000",
        "g0000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-00000000000é",
        String(repeating: "0", count: 36), String(repeating: "a", count: 400),
    ])
    func whatIsNotAnIdIsRefusedByBothAlike(_ text: String) {
        #expect(EntityID(utf8: text.utf8) == nil, "\(text)")
        #expect(EntityID(text) == nil, "\(text)")
    }

    @Test func everyIdRoundTripsThroughItsBytes() {
        for _ in 0..<200 {
            let id = EntityID()
            #expect(EntityID(utf8: Array(id.description.utf8)) == id)
        }
    }
}

extension Collection {
    fileprivate subscript(safe index: Int) -> Element? {
        index < count ? self[self.index(startIndex, offsetBy: index)] : nil
    }
}
