/// Why the server could not start, in words for the operator.
public struct ServerStartError: Error, CustomStringConvertible {
    /// The reason, as shown to the operator.
    public var description: String
    /// A reason in words.
    package init(_ description: String) { self.description = description }
}
