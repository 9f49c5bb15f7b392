import Foundation
@testable import ParleyServer
import Testing

/// The document's top-level `tags` list (OpenAPIDocument.document()) left out "threads" and
/// "pins", which operations use: documentation tools showed those operations outside the
/// declared, ordered groups.
@Suite struct OpenAPITagsTests {
    /// A documentation tool groups by tag: a tag used but not declared is a group with no
    /// entry, one declared but unused an empty group.
    @Test func theTagsUsedAreTheTagsDeclared() throws {
        let document = try OpenAPIDocumentShapeTests.document()
        let declared = try #require(document["tags"] as? [[String: Any]]).compactMap { $0["name"] as? String }
        #expect(Set(declared).count == declared.count, "no tag twice")
        var used = Set<String>()
        for (name, operation) in try OpenAPIDocumentShapeTests.operations(document) {
            let tags = operation["tags"] as? [String] ?? []
            #expect(tags.count == 1, "\(name): \(tags)")
            used.formUnion(tags)
        }
        #expect(used == Set(declared), "used \(used.sorted()), declared \(declared)")
    }
}
