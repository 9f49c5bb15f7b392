import Foundation

/// The checkout the tests run from, wherever a test file sits in the tree.
public enum Repository {
    /// The repository's root folder (where Package.swift is).
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A path under the root.
    public static func url(_ relativePath: String) -> URL { root.appendingPathComponent(relativePath) }

    /// Where tests save what a person should look at (screenshots, pane dumps).
    public static var screens: String { url(".build/test-screens").path }
}
