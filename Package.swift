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
        // Route-level tests in process: the real router and middleware, no socket.
        .library(name: "LarderTesting", targets: ["LarderTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Logging: Larder's line format is a LogHandler (LarderLogHandler), so an
        // app that embeds Larder gets its lines in its own logging backend.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        // Digests (SHA-256 for the viewer's entity tags).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
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
        // The system libpq's header (PostgreSQL's C client; Debian: libpq-dev)
        // for the PostgreSQL store. Not linked, and so no pkg-config here (it
        // would add -lpq): CLibPQLoader loads the library when the store is used.
        .systemLibrary(
            name: "CLibPQ",
            providers: [.apt(["libpq-dev"])]
        ),
        // libpq loaded with dlopen when the PostgreSQL store is first used
        // (CLibPQ's functions, forwarded): a larder that never uses it runs
        // without libpq and the libraries it pulls in.
        .target(name: "CLibPQLoader", dependencies: ["CLibPQ"], linkerSettings: [.linkedLibrary("dl")]),
        // Linux's epoll and eventfd (in the C library; the Glibc module
        // leaves them out), for the PostgreSQL store's event loop.
        .systemLibrary(name: "CEpoll"),
        // The wire types the server encodes and the clients decode: value info,
        // listing page, change event, error codes and body. No dependencies.
        .target(name: "LarderModel"),
        // Larder's swift-log handler (re-exports Logging), locks and clocks shared by the libraries.
        .target(name: "LarderSupport", dependencies: ["LarderModel", .product(name: "Logging", package: "swift-log")]),
        // The store's vocabulary, which every store, the format and both
        // faces speak: keys (`StoreKey`), store errors (`StoreError`) and
        // replies given now or later (`StoreReply`). No format, no store here.
        .target(name: "LarderStoreVocabulary", dependencies: ["LarderSupport", "LarderModel"]),
        // The value-file format every store hands values in: the gzip header
        // and its metadata, zlib, segmented compression, an open value
        // (`StoredValue`), the value-file cache both stores keep (`ValueCache`)
        // and the upload pipeline (`ValueUpload`). No store, no HTTP here.
        .target(name: "LarderValueFile", dependencies: ["CZlib", "LarderStoreVocabulary", "LarderSupport", "LarderModel"]),
        // The store seam the routes depend on: `ValueStore`, write
        // conditions, changes, listings, totals. No backend here.
        .target(name: "LarderStorage", dependencies: ["LarderStoreVocabulary", "LarderValueFile", "LarderSupport", "LarderModel"]),
        // The disk store: one gzip file per key behind barrier queues, key
        // and expiry indexes, cache, group commit, the data directory's lock.
        .target(name: "LarderDiskStore", dependencies: ["LarderStoreVocabulary", "LarderStorage", "LarderValueFile", "LarderSupport", "LarderModel"]),
        // A read-only fixture directory layered under a writable store (`--fixtures`).
        .target(name: "LarderFixtures", dependencies: ["LarderStoreVocabulary", "LarderDiskStore", "LarderStorage", "LarderValueFile", "LarderSupport"]),
        // The same store on PostgreSQL (`--store postgres://…`): libpq driven
        // by Dispatch sources, several servers on one database. No HTTP here.
        .target(name: "LarderPostgres", dependencies: ["LarderStoreVocabulary", "CLibPQ", "CLibPQLoader", "CEpoll", "LarderStorage", "LarderValueFile", "LarderSupport", "LarderModel"]),
        // Which store a server runs on, chosen once from its flags: the disk
        // store or PostgreSQL, under the fixtures or not, and the stores of its
        // namespaces on the same backend (`DiskNamespaceStores`,
        // `PostgresNamespaceStores`, both over the shared fixtures). The one
        // place that knows the backends.
        .target(name: "LarderBackends", dependencies: [
            "LarderDiskStore", "LarderFixtures", "LarderPostgres", "LarderStorage", "LarderValueFile", "LarderSupport",
        ]),
        // Sockets, the incremental parser, connections and responses. No storage here.
        .target(name: "LarderHTTP", dependencies: ["LarderSupport", "LarderModel", "CEpoll"]),
        // JSON values for atomic append and merge patch: strict parsing, exact numbers, no dependencies.
        .target(name: "LarderJSON"),
        // The browser viewer's files: built into the binary from Public/ by the
        // EmbedViewer plugin, or read from --public-dir. No HTTP here.
        .target(name: "LarderViewer", dependencies: ["LarderSupport", .product(name: "Crypto", package: "swift-crypto")],
                plugins: ["EmbedViewer"]),
        .executableTarget(name: "ViewerEmbedder"),
        .plugin(name: "EmbedViewer", capability: .buildTool(), dependencies: ["ViewerEmbedder"]),
        // What clients sharing values need, written once for both faces (the
        // HTTP routes and the embedded store): JSON append and merge patch as
        // store updates with their limits, the change hub that fans store
        // changes out to watchers and feeds, and key watches. No HTTP here.
        .target(name: "LarderSharing", dependencies: ["LarderStoreVocabulary", "LarderStorage", "LarderValueFile", "LarderJSON", "LarderSupport"]),
        // The routing core both faces stand on: routes, the middleware
        // chain, the route table (an `HTTPServer`'s handler), query
        // parameters. No face, no store here.
        .target(name: "LarderRouting", dependencies: ["LarderHTTP", "LarderSupport", "LarderModel"]),
        // The S3-compatible face: one route on the core (SigV4, S3's XML,
        // aws-chunked bodies) over the same store seam. No Larder routes here.
        .target(name: "LarderS3", dependencies: ["LarderStoreVocabulary", "LarderJSON",
            // CZlib: CRC32 of x-amz-checksum-crc32.
            "CZlib", "LarderHTTP", "LarderRouting", "LarderModel", "LarderStorage", "LarderValueFile", "LarderSupport",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The Larder API face: its routes and middleware, which wire HTTP
        // requests to the store, namespaces, journal, faults, metrics. No S3 here.
        .target(name: "LarderApp", dependencies: ["LarderStoreVocabulary", 
            "LarderModel", "LarderSupport", "LarderStorage", "LarderValueFile", "LarderHTTP", "LarderRouting", "LarderJSON", "LarderSharing",
            "LarderViewer",
        ]),
        // The composition root: a running Larder (`LarderServer`) made of a
        // store, the Larder API face and the S3 face, and what each needs of
        // the other handed over. The one target that imports both faces.
        .target(name: "LarderServer", dependencies: [
            "LarderApp", "LarderS3", "LarderRouting", "LarderHTTP", "LarderSharing", "LarderStorage", "LarderSupport", "LarderModel",
        ]),
        // The in-process tester: a `LarderServer` that never listens, a
        // request through its route table and middleware, its answer as a
        // connection would have sent it (`HTTPInProcessExchange`).
        .target(name: "LarderTesting", dependencies: [
            "LarderServer", "LarderBackends", "LarderDiskStore", "LarderHTTP", "LarderSupport",
        ]),
        // A raw-socket HTTP/1.1 client: blocking for protocol tests and
        // `larder healthcheck` (no libcurl in the image), async on Dispatch
        // for `LarderClient`.
        .target(name: "LarderWire", dependencies: ["LarderModel", "LarderSupport"]),
        // The Swift API: one `Larder` protocol (async, Codable, CAS update, watch,
        // change feed), its conveniences (Persistible, bundled fallback). Foundation only.
        .target(name: "LarderKit", dependencies: ["LarderModel"]),
        // `Larder` over HTTP: Larder's own socket client (LarderWire) or
        // URLSession (FoundationNetworking), no NIO.
        .target(name: "LarderClient", dependencies: ["LarderKit", "LarderModel", "LarderWire"]),
        // `Larder` in-process over the server's own disk store: same files, no server.
        .target(name: "LarderEmbedded", dependencies: ["LarderStoreVocabulary", 
            "LarderKit", "LarderModel", "LarderDiskStore", "LarderStorage", "LarderValueFile", "LarderSharing", "LarderSupport",
        ]),
        .executableTarget(
            name: "larder",
            dependencies: [
                "LarderServer", "LarderApp", "LarderRouting",
                // StoreChoice: the one place that chooses and builds a store.
                "LarderBackends",
                // main.swift names the stores' options, the HTTP limits,
                // ServerDefaults and Larder's log handler.
                "LarderDiskStore", "LarderPostgres",
                "LarderStorage", "LarderValueFile", "LarderHTTP", "LarderModel", "LarderSupport",
                // `--s3-port`, `--s3-credentials`: the S3 listener's configuration.
                "LarderS3",
                // `larder healthcheck` GETs /healthz with it (no curl in the image).
                "LarderWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "LarderStoreVocabularyTests", dependencies: ["LarderStoreVocabulary", "LarderSupport", "LarderTestSupport"]),
        .testTarget(name: "LarderValueFileTests", dependencies: ["LarderStoreVocabulary", "LarderValueFile", "LarderSupport", "LarderTestSupport", "CZlib"]),
        // The disk store alone, and through a real server or the built binary
        // where the subject is what reaches the disk: durability, crash
        // consistency, disk faults, group commit, restarts, the read cache.
        .testTarget(name: "LarderDiskStoreTests", dependencies: [
            "LarderStoreVocabulary", "LarderDiskStore", "LarderStorage", "LarderValueFile", "LarderSupport", "LarderTestSupport", "LarderWire", "CZlib",
        ]),
        // The parser fuzzer's checks: run by the libFuzzer target (Fuzz/build.sh)
        // and by the corpus replay in LarderHTTPTests. Not in any product: it
        // reaches the parser through `package` access, so LarderHTTP ships no fuzzing code.
        .target(name: "LarderHTTPFuzzHarness", dependencies: ["LarderHTTP"], path: "Fuzz/Harness"),
        // The HTTP layer: its parts alone, a plain HTTPServer with a small
        // handler, and a real Larder server (TestServer, ChildServer) where the
        // subject is the connection: the protocol, hostile and slow clients,
        // sendfile, network faults, the connection cap, half-close, shutdown.
        .testTarget(name: "LarderHTTPTests", dependencies: ["LarderHTTP", "LarderHTTPFuzzHarness", "LarderModel", "LarderSupport", "LarderTestSupport", "LarderWire"]),
        .testTarget(name: "LarderJSONTests", dependencies: ["LarderJSON"]),
        .testTarget(name: "LarderSharingTests", dependencies: ["LarderStoreVocabulary", 
            "LarderSharing", "LarderStorage", "LarderValueFile", "LarderDiskStore", "LarderJSON", "LarderTestSupport",
        ]),
        // What the tests share: a server in this process (TestServer) or the
        // built binary (ChildServer), the throwaway PostgreSQL, polling, child
        // processes, gzip and key helpers, the repository's paths. A library,
        // not tests: every test target that needs them imports it.
        .target(name: "LarderTestSupport", dependencies: ["LarderStoreVocabulary", 
            "LarderApp", "LarderServer", "LarderRouting", "LarderBackends", "LarderHTTP", "LarderModel", "LarderPostgres", "LarderStorage", "LarderValueFile", "LarderDiskStore",
            "LarderFixtures", "LarderSupport", "LarderWire", "CZlib", "CLarderTestScratch",
        ], path: "Tests/LarderTestSupport"),
        // Chooses the test process's scratch directory (a tmpfs) before `main`.
        .target(name: "CLarderTestScratch", path: "Tests/CLarderTestScratch"),
        // One test target per module, named after it.
        .testTarget(name: "LarderModelTests", dependencies: ["LarderModel"]),
        // The seam's own logic, pure: the listing merge, the change history, write conditions.
        .testTarget(name: "LarderStorageTests", dependencies: ["LarderStorage", "LarderStoreVocabulary", "LarderValueFile", "LarderModel"]),
        // The fixture layer under a store, through a real server.
        .testTarget(name: "LarderFixturesTests", dependencies: [
            "LarderStoreVocabulary",
            "LarderFixtures", "LarderApp", "LarderDiskStore", "LarderStorage", "LarderValueFile", "LarderWire", "LarderTestSupport",
        ]),
        // StoreChoice building the disk store, with and without fixtures, and its namespaces' stores.
        .testTarget(name: "LarderBackendsTests", dependencies: [
            "LarderBackends", "LarderDiskStore", "LarderFixtures", "LarderStorage", "LarderStoreVocabulary", "LarderValueFile", "LarderSupport",
            "LarderTestSupport", "LarderServer", "LarderWire",
        ]),
        // LarderWire's blocking client against a plain HTTPServer, and its response parser.
        .testTarget(name: "LarderWireTests", dependencies: ["LarderWire", "LarderHTTP", "LarderSupport", "LarderTestSupport"]),
        .testTarget(name: "LarderSupportTests", dependencies: ["LarderSupport", "LarderTestSupport"]),
        // The `Larder` conformance suites, run against both implementations
        // (client and embedded), and the Timeline example of docs/swift-api.md.
        .testTarget(name: "LarderKitTests", dependencies: [
            "LarderKit", "LarderClient", "LarderEmbedded", "LarderSupport", "LarderWire", "LarderTestSupport",
        ]),
        .testTarget(name: "LarderClientTests", dependencies: [
            "LarderClient", "LarderApp", "LarderServer", "LarderRouting", "LarderSupport", "LarderWire", "LarderTestSupport",
        ]),
        .testTarget(name: "LarderEmbeddedTests", dependencies: ["LarderStoreVocabulary", 
            "LarderEmbedded", "LarderStorage", "LarderValueFile", "LarderDiskStore", "LarderFixtures", "LarderWire", "LarderTestSupport",
        ]),
        .testTarget(name: "LarderPostgresTests", dependencies: ["LarderStoreVocabulary", 
            "LarderPostgres", "LarderApp", "LarderServer", "LarderRouting", "LarderClient", "LarderStorage", "LarderValueFile", "LarderDiskStore", "LarderFixtures", "LarderSupport", "LarderWire", "LarderTestSupport", "LarderModel",
        ]),
        .testTarget(name: "LarderViewerTests", dependencies: ["LarderViewer", "LarderWire", "LarderTestSupport"]),
        // The HTTP API's behaviour through a real server: routes, middleware,
        // the store behind them, sharing, namespaces, snapshots, faults.
        .testTarget(name: "LarderAppTests", dependencies: [
            "LarderStoreVocabulary", "LarderApp", "LarderServer", "LarderRouting", "LarderHTTP", "LarderModel", "LarderStorage", "LarderValueFile",
            "LarderDiskStore", "LarderSupport", "LarderWire", "LarderTestSupport",
            "LarderEmbedded", "LarderClient", .product(name: "Logging", package: "swift-log"), .product(name: "InMemoryLogging", package: "swift-log"),
        ]),
        // The S3 face: SigV4 against AWS's published examples, and boto3 against a real server.
        .testTarget(name: "LarderS3Tests", dependencies: [
            "LarderS3", "LarderApp", "LarderServer", "LarderRouting", "LarderHTTP", "LarderWire", "CZlib", "LarderTestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The routing core: matches, the chain, the intake and mounts, limits.
        .testTarget(name: "LarderRoutingTests", dependencies: ["LarderRouting", "LarderHTTP", "LarderTesting", "LarderTestSupport"]),
        // The composition root, and the in-process tester through it.
        .testTarget(name: "LarderServerTests", dependencies: [
            "LarderServer", "LarderRouting", "LarderS3", "LarderBackends", "LarderDiskStore", "LarderSupport", "LarderTesting", "LarderTestSupport",
        ]),
        .testTarget(name: "LarderTestingTests", dependencies: ["LarderTesting", "LarderTestSupport"]),
        // The `larder` executable: flags, environment, `healthcheck`, the runner's output.
        .testTarget(name: "larderTests", dependencies: [
            "LarderApp", "LarderServer", "LarderRouting", "LarderHTTP", "LarderModel", "LarderPostgres", "LarderStorage", "LarderValueFile", "LarderDiskStore", "LarderFixtures", "LarderWire", "LarderTestSupport",
        ]),
        // The Dockerfile and docker-compose.yml, checked offline.
        .testTarget(name: "DeploymentTests", dependencies: ["LarderWire", "LarderTestSupport"]),
        // The examples of README.md and docs/, run as written.
        .testTarget(name: "DocumentationTests", dependencies: ["LarderTestSupport", "LarderModel"]),
        // Runs CAS `update` increments through LarderClient, so a test can make
        // two processes race on one key (LarderCounterWorkerTests).
        .executableTarget(name: "LarderCounterWorker", dependencies: ["LarderClient"], path: "Tests/LarderCounterWorker"),
    ]
)
