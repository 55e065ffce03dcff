// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Larder",
    products: [
        .executable(name: "larder", targets: ["larder"]),
        .library(name: "LarderModel", targets: ["LarderModel"]),
        .library(name: "LarderKit", targets: ["LarderKit"]),
        .library(name: "LarderClient", targets: ["LarderClient"]),
        .library(name: "LarderEmbedded", targets: ["LarderEmbedded"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // `swift package generate-documentation --target LarderKit`: the DocC catalogue of the Swift API.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // The system zlib, found through pkg-config (Debian: zlib1g-dev).
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // The system libpq (PostgreSQL's C client), found through pkg-config
        // (Debian: libpq-dev), for the PostgreSQL store.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The wire types the server encodes and the clients decode: value info,
        // listing page, change event, error codes and body. No dependencies.
        .target(name: "LarderModel"),
        // A tiny leveled line logger, locks and clocks shared by the libraries.
        .target(name: "LarderSupport", dependencies: ["LarderModel"]),
        // Keys, value files, gzip and the barrier-queue disk store. No HTTP here.
        .target(name: "LarderStore", dependencies: ["CZlib", "LarderSupport", "LarderModel"]),
        // The same store on PostgreSQL (`--store postgres://…`): libpq driven
        // by Dispatch sources, several servers on one database. No HTTP here.
        .target(name: "LarderPostgres", dependencies: ["CLibPQ", "LarderStore", "LarderSupport", "LarderModel"]),
        // Sockets, the incremental parser, connections and responses. No storage here.
        .target(name: "LarderHTTP", dependencies: ["LarderSupport", "LarderModel"]),
        // JSON values for atomic append and merge patch: strict parsing, exact numbers, no dependencies.
        .target(name: "LarderJSON"),
        // The browser viewer's files: built into the binary from Public/ by the
        // EmbedViewer plugin, or read from --public-dir. No HTTP here.
        .target(name: "LarderViewer", dependencies: ["LarderSupport"], plugins: ["EmbedViewer"]),
        .executableTarget(name: "ViewerEmbedder"),
        .plugin(name: "EmbedViewer", capability: .buildTool(), dependencies: ["ViewerEmbedder"]),
        // What clients sharing values need, written once for both faces (the
        // HTTP routes and the embedded store): JSON append and merge patch as
        // store updates with their limits, the change hub that fans store
        // changes out to watchers and feeds, and key watches. No HTTP here.
        .target(name: "LarderSharing", dependencies: ["LarderStore", "LarderJSON", "LarderSupport"]),
        // Routes and middleware that wire HTTP requests to the store.
        .target(name: "LarderApp", dependencies: ["LarderModel", "LarderStore", "LarderHTTP", "LarderJSON", "LarderSharing", "LarderViewer"]),
        // A raw-socket HTTP/1.1 client: protocol tests and `larder healthcheck`
        // (no libcurl in the image).
        .target(name: "LarderWire", dependencies: ["LarderModel"]),
        // The Swift API: one `Larder` protocol (async, Codable, CAS update, watch,
        // change feed), its conveniences (Persistible, bundled fallback). Foundation only.
        .target(name: "LarderKit", dependencies: ["LarderModel"]),
        // `Larder` over HTTP with URLSession (FoundationNetworking), no NIO.
        .target(name: "LarderClient", dependencies: ["LarderKit"]),
        // `Larder` in-process over the server's own disk store: same files, no server.
        .target(name: "LarderEmbedded", dependencies: ["LarderKit", "LarderStore", "LarderSharing"]),
        .executableTarget(
            name: "larder",
            dependencies: [
                "LarderApp",
                "LarderPostgres",
                // `larder healthcheck` GETs /healthz with it (no curl in the image).
                "LarderWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "LarderStoreTests", dependencies: ["LarderStore", "CZlib"]),
        .testTarget(name: "LarderHTTPTests", dependencies: ["LarderHTTP", "LarderWire"]),
        .testTarget(name: "LarderJSONTests", dependencies: ["LarderJSON"]),
        .testTarget(name: "LarderSharingTests", dependencies: ["LarderSharing", "LarderStore", "LarderJSON"]),
        .testTarget(name: "LarderAppTests", dependencies: [
            "LarderApp", "LarderModel", "LarderStore", "LarderWire", "LarderViewer", "CZlib",
            "LarderKit", "LarderClient", "LarderEmbedded", "LarderPostgres",
        ]),
        // Runs CAS `update` increments through LarderClient, so a test can make
        // two processes race on one key (LarderCounterWorkerTests).
        .executableTarget(name: "LarderCounterWorker", dependencies: ["LarderClient"], path: "Tests/LarderCounterWorker"),
    ]
)
