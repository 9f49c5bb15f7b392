import Hummingbird
import ParleyStorage

extension AttachmentBlobs {
    /// A response body that streams `range` of a blob.
    func responseBody(_ name: String, range: ClosedRange<Int64>?, length: Int64) -> ResponseBody {
        ResponseBody(contentLength: Int(range.map { $0.upperBound - $0.lowerBound + 1 } ?? length)) { writer in
            try await self.read(name, range: range) { try await writer.write($0) }
            try await writer.finish(nil)
        }
    }
}
