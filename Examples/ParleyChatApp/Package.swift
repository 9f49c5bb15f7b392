// swift-tools-version: 6.2
// A whole chat app on ParleyUI, as an app package: open this folder in Xcode (File > Open…),
// pick the ParleyChatApp scheme and an iPhone simulator, and run, with `swift run parley serve`
// running in the repository (README.md here says more).
//
// `AppleProductTypes` and its `.iOSApplication` product exist only in Xcode and Swift
// Playgrounds: `swift build` in a terminal stops at "no such module 'AppleProductTypes'".
import AppleProductTypes
import PackageDescription

let package = Package(
    name: "ParleyChatApp",
    platforms: [.iOS(.v17)],
    products: [
        .iOSApplication(
            name: "ParleyChatApp",
            targets: ["ParleyChatApp"],
            bundleIdentifier: "com.example.ParleyChatApp",
            teamIdentifier: "",
            displayVersion: "1.0",
            bundleVersion: "1",
            appIcon: .placeholder(icon: .note),
            accentColor: .presetColor(.blue),
            supportedDeviceFamilies: [.phone, .pad],
            supportedInterfaceOrientations: [
                .portrait,
                .landscapeRight,
                .landscapeLeft,
                .portraitUpsideDown(.when(deviceFamilies: [.pad])),
            ],
            capabilities: [
                // The demo server is plain HTTP at 127.0.0.1 (or the Mac's address on a
                // device): App Transport Security lets URLSession reach IP addresses and
                // local names over HTTP with this. A real server has HTTPS and needs nothing.
                .appTransportSecurity(configuration: .init(allowsLocalNetworking: true)),
                // The attach menu's Camera: iOS asks the person with this sentence
                // (NSCameraUsageDescription). The Photos picker needs no permission.
                .camera(purposeString: "Take a photo to send in a chat."),
            ]
        ),
    ],
    dependencies: [.package(name: "Parley", path: "../..")],
    targets: [
        .executableTarget(
            name: "ParleyChatApp",
            dependencies: [.product(name: "ParleyUI", package: "Parley")],
            path: "Sources"
        ),
    ]
)
