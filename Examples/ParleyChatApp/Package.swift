// swift-tools-version: 6.2
// A whole chat app on ParleyUI: open this folder in Xcode (File > Open…), choose the
// ParleyChatApp scheme and run it on a Mac or an iOS simulator, with `swift run parley serve`
// running in the repository.
import PackageDescription

let package = Package(
    name: "ParleyChatApp",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(name: "Parley", path: "../..")],
    targets: [
        .executableTarget(
            name: "ParleyChatApp",
            dependencies: [.product(name: "ParleyUI", package: "Parley")],
            path: "Sources"
        ),
    ]
)
