// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Parley",
    defaultLocalization: "en",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "ParleyProtocol", targets: ["ParleyProtocol"]),
        .library(name: "ParleyServer", targets: ["ParleyServer"]),
        .library(name: "ParleyClient", targets: ["ParleyClient"]),
        .executable(name: "parley", targets: ["parley"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Apple platforms: the SDK's WebSocket on Network.framework (already in the graph through
        // swift-websocket; Linux builds do not compile it).
        .package(url: "https://github.com/apple/swift-nio-transport-services.git", from: "1.28.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Spans of a message's path (ParleyServer records them through Tracing; `parley serve`
        // exports them over OTLP/HTTP when configured). gRPC export is left out: it would
        // build gRPC for every checkout, and OTLP/HTTP reaches every collector.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.3.0"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // Tests only: parses the SwiftUI sources that no Linux machine can compile.
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.1"),
    ],
    targets: [
        .target(
            name: "ParleyProtocol",
            swiftSettings: strict
        ),
        // What every store is: the `ParleyStore` protocol and its transaction primitives, the
        // records they keep, group commit, the counting rules as SQL (`ChatSQL`) and blobs. A
        // wall: it sees neither the chat rules nor HTTP, which live above it, nor any database.
        .target(
            name: "ParleyStorage",
            dependencies: [
                "ParleyProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The embedded store: one SQLite file through GRDB. Sees ParleyStorage, not PostgreSQL.
        .target(
            name: "ParleySQLite",
            dependencies: [
                "ParleyProtocol",
                "ParleyStorage",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        // The store for several nodes: PostgreSQL through PostgresNIO. Sees ParleyStorage, not SQLite.
        .target(
            name: "ParleyPostgres",
            dependencies: [
                "ParleyProtocol",
                "ParleyStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The chat rules, written once over the stores' transaction primitives: no HTTP, no
        // sockets; the server calls them, the stores never see them.
        .target(
            name: "ParleyRules",
            dependencies: ["ParleyProtocol", "ParleyStorage"],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyServer",
            dependencies: [
                "ParleyProtocol",
                "ParleyStorage",
                "ParleySQLite",
                "ParleyPostgres",
                "ParleyRules",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Web")],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyClient",
            dependencies: [
                "ParleyProtocol",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(
                    name: "NIOTransportServices", package: "swift-nio-transport-services",
                    condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                // REST with an extra trusted CA on Linux, where URLSession cannot take one.
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(platforms: [.linux])),
            ],
            // The String Catalog of user-facing texts (error sentences), English and French.
            resources: [.process("Resources")],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyBench",
            dependencies: [
                "ParleyProtocol",
                "ParleyServer",
                "ParleyClient",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "ParleyTerminal",
            dependencies: ["ParleyProtocol", "ParleyClient"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "parley",
            dependencies: [
                "ParleyProtocol",
                "ParleyStorage",
                "ParleySQLite",
                "ParleyServer",
                "ParleyClient",
                "ParleyTerminal",
                "ParleyBench",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The README's SDK sample, built and run against a live server by the tests.
        .executableTarget(
            name: "SDKQuickStart",
            dependencies: ["ParleyClient"],
            path: "Examples/SDKQuickStart",
            swiftSettings: strict
        ),
        // Caps how many tests run at once (a C constructor sets Swift Testing's width before
        // its entry point reads it; see Tests/Parallelism/parallelism.c).
        .target(name: "ParleyTestParallelism", path: "Tests/Parallelism"),
        .target(
            name: "ParleyTestSupport",
            dependencies: [
                "ParleyProtocol", "ParleyStorage", "ParleySQLite", "ParleyPostgres", "ParleyRules", "ParleyServer", "ParleyClient",
                "ParleyTestParallelism",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/Support",
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyProtocolTests",
            dependencies: ["ParleyProtocol"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyServerTests",
            dependencies: [
                "ParleyProtocol", "ParleyStorage", "ParleySQLite", "ParleyPostgres", "ParleyRules", "ParleyServer", "ParleyClient",
                "ParleyTestSupport", "ParleyBench",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
            ],
            swiftSettings: strict
        ),
        // Parses every SwiftUI file (ParleyUI, the example app) and checks the SDK names they
        // use exist, since SwiftUI does not compile on Linux.
        .testTarget(
            name: "ParleyUISourceTests",
            dependencies: [
                .product(name: "SwiftParser", package: "swift-syntax"),
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftParserDiagnostics", package: "swift-syntax"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ParleyClientTests",
            dependencies: ["ParleyProtocol", "ParleyServer", "ParleyClient", "ParleyTestSupport", "ParleyTerminal"],
            swiftSettings: strict
        ),
    ]
)

// SwiftUI screens: declared only where SwiftUI exists (Apple platforms), so Linux builds and CI
// skip the target; ParleyUISourceTests parses its files everywhere.
#if os(macOS)
package.products.append(.library(name: "ParleyUI", targets: ["ParleyUI"]))
package.targets.append(.target(
    name: "ParleyUI", dependencies: ["ParleyClient", "ParleyProtocol"], resources: [.process("Resources")], swiftSettings: strict))
#endif
