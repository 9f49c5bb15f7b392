import Foundation
import ParleyProtocol
import Testing

/// The id of a frame the decoder cannot read (too deep, broken after the id) is still found, so
/// its error reply is addressed to it; nothing else is mistaken for it.
@Suite struct FrameHeaderScanTests {
    @Test func theTopLevelIdIsFoundWhateverFollowsOrPrecedesIt() {
        let deep = #"{"id":"f7","type":"message.send","data":"# + String(repeating: "[", count: 5000)
        #expect(FrameHeader.scanId(Data(deep.utf8)) == "f7")
        #expect(FrameHeader.scanId(Data(#" { "type" : "x", "data": {"id": "inner"}, "id" : "outer" }"#.utf8)) == "outer")
        #expect(FrameHeader.scanId(Data(#"{"data":["id","x"],"id":"a1"}"#.utf8)) == "a1")
        #expect(FrameHeader.scanId(Data(#"{"text":"say \"id\":\"no\"","id":"yes"}"#.utf8)) == "yes")
        #expect(FrameHeader.scanId(Data(#"{"data":{"id":"inner"}}"#.utf8)) == nil)
        #expect(FrameHeader.scanId(Data(#"{"id":42}"#.utf8)) == nil)
        #expect(FrameHeader.scanId(Data(#"{"id":"a\"b"}"#.utf8)) == nil)
        #expect(FrameHeader.scanId(Data(#"["id","x"]"#.utf8)) == nil)
        #expect(FrameHeader.scanId(Data("".utf8)) == nil)
        #expect(FrameHeader.scanId(Data(#"{"id":"unterminated"#.utf8)) == nil)
    }
}
