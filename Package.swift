// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Larder",
    products: [
        .executable(name: "larder", targets: ["larder"]),
        .library(name: "LarderClient", targets: ["LarderClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // The system zlib, found through pkg-config (Debian: zlib1g-dev).
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // Keys, value files, gzip and the barrier-queue disk store. No HTTP here.
        // A tiny leveled line logger shared by the libraries.
        .target(name: "LarderSupport"),
        .target(name: "LarderStore", dependencies: ["CZlib", "LarderSupport"]),
        // Sockets, the incremental parser, connections and responses. No storage here.
        .target(name: "LarderHTTP", dependencies: ["LarderSupport"]),
        // JSON values for atomic append and merge patch: strict parsing, exact numbers, no dependencies.
        .target(name: "LarderJSON"),
        // The browser viewer's files: built into the binary from Public/ by the
        // EmbedViewer plugin, or read from --public-dir. No HTTP here.
        .target(name: "LarderViewer", dependencies: ["LarderSupport"], plugins: ["EmbedViewer"]),
        .executableTarget(name: "ViewerEmbedder"),
        .plugin(name: "EmbedViewer", capability: .buildTool(), dependencies: ["ViewerEmbedder"]),
        // Routes, middleware and the change hub that wire HTTP requests to the store.
        .target(name: "LarderApp", dependencies: ["LarderStore", "LarderHTTP", "LarderJSON", "LarderViewer"]),
        // A small blocking HTTP client for Larder, used by the tests too.
        .target(name: "LarderClient"),
        .executableTarget(
            name: "larder",
            dependencies: [
                "LarderApp",
                // `larder healthcheck` GETs /healthz with it (no curl in the image).
                "LarderClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "LarderStoreTests", dependencies: ["LarderStore", "CZlib"]),
        .testTarget(name: "LarderHTTPTests", dependencies: ["LarderHTTP", "LarderClient"]),
        .testTarget(name: "LarderJSONTests", dependencies: ["LarderJSON"]),
        .testTarget(name: "LarderAppTests", dependencies: ["LarderApp", "LarderStore", "LarderClient", "LarderViewer", "CZlib"]),
    ]
)
