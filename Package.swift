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
        // The value-file format every store hands values in: keys and store
        // errors, the gzip header and its metadata, zlib, segmented
        // compression, an open value (`StoredValue`) and the upload pipeline
        // (`ValueUpload`). No store, no HTTP here.
        .target(name: "LarderValueFile", dependencies: ["CZlib", "LarderSupport", "LarderModel"]),
        // The store seam the routes depend on: `ValueStore`, write
        // conditions, changes, listings, totals. No backend here.
        .target(name: "LarderStorage", dependencies: ["LarderValueFile", "LarderSupport", "LarderModel"]),
        // The disk store: one gzip file per key behind barrier queues, key
        // and expiry indexes, cache, group commit, the data directory's lock.
        .target(name: "LarderDiskStore", dependencies: ["LarderStorage", "LarderValueFile", "LarderSupport", "LarderModel"]),
        // A read-only fixture directory layered under a writable store (`--fixtures`).
        .target(name: "LarderFixtures", dependencies: ["LarderDiskStore", "LarderStorage", "LarderValueFile", "LarderSupport"]),
        // The same store on PostgreSQL (`--store postgres://…`): libpq driven
        // by Dispatch sources, several servers on one database. No HTTP here.
        .target(name: "LarderPostgres", dependencies: ["CLibPQ", "LarderStorage", "LarderValueFile", "LarderSupport", "LarderModel"]),
        // Sockets, the incremental parser, connections and responses. No storage here.
        .target(name: "LarderHTTP", dependencies: ["LarderSupport", "LarderModel"]),
        // JSON values for atomic append and merge patch: strict parsing, exact numbers, no dependencies.
        .target(name: "LarderJSON"),
        // The browser viewer's files: built into the binary from Public/ by the
        // EmbedViewer plugin, or read from --public-dir. No HTTP here.
        .target(name: "LarderViewer", dependencies: ["LarderSupport"], plugins: ["EmbedViewer"]),
        .executableTarget(name: "ViewerEmbedder"),
        .plugin(name: "EmbedViewer", capability: .buildTool(), dependencies: ["ViewerEmbedder"]),
        // Routes, middleware and the change hub that wire HTTP requests to the store.
        .target(name: "LarderApp", dependencies: [
            "LarderModel", "LarderSupport", "LarderStorage", "LarderValueFile", "LarderHTTP", "LarderJSON", "LarderViewer",
        ]),
        // A raw-socket HTTP/1.1 client: protocol tests and `larder healthcheck`
        // (no libcurl in the image).
        .target(name: "LarderWire", dependencies: ["LarderModel"]),
        // The Swift API: one `Larder` protocol (async, Codable, CAS update, watch,
        // change feed), its conveniences (Persistible, bundled fallback). Foundation only.
        .target(name: "LarderKit", dependencies: ["LarderModel"]),
        // `Larder` over HTTP with URLSession (FoundationNetworking), no NIO.
        .target(name: "LarderClient", dependencies: ["LarderKit"]),
        // `Larder` in-process over the server's own disk store: same files, no server.
        .target(name: "LarderEmbedded", dependencies: [
            "LarderKit", "LarderModel", "LarderDiskStore", "LarderStorage", "LarderValueFile", "LarderJSON",
        ]),
        .executableTarget(
            name: "larder",
            dependencies: [
                "LarderApp",
                // The one place that chooses and builds a store.
                "LarderDiskStore",
                "LarderFixtures",
                "LarderPostgres",
                "LarderStorage",
                "LarderValueFile",
                "LarderHTTP",
                "LarderSupport",
                // `larder healthcheck` GETs /healthz with it (no curl in the image).
                "LarderWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "LarderValueFileTests", dependencies: ["LarderValueFile", "CZlib"]),
        .testTarget(name: "LarderDiskStoreTests", dependencies: [
            "LarderDiskStore", "LarderStorage", "LarderValueFile", "LarderSupport", "CZlib",
        ]),
        .testTarget(name: "LarderHTTPTests", dependencies: ["LarderHTTP", "LarderWire"]),
        .testTarget(name: "LarderJSONTests", dependencies: ["LarderJSON"]),
        .testTarget(name: "LarderAppTests", dependencies: [
            "LarderApp", "LarderModel", "LarderStorage", "LarderValueFile", "LarderDiskStore", "LarderFixtures",
            "LarderWire", "LarderViewer", "LarderHTTP", "LarderSupport", "CZlib",
            "LarderKit", "LarderClient", "LarderEmbedded", "LarderPostgres",
        ]),
        // Runs CAS `update` increments through LarderClient, so a test can make
        // two processes race on one key (LarderCounterWorkerTests).
        .executableTarget(name: "LarderCounterWorker", dependencies: ["LarderClient"], path: "Tests/LarderCounterWorker"),
    ]
)
