import Foundation
import LarderApp
import LarderRouting
import LarderServer
import LarderBackends
import LarderWire
import LarderHTTP
import LarderSupport
import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderPostgres
import LarderFixtures
import Testing

/// A real Larder server in this process: real sockets on an ephemeral
/// loopback port, a fresh temp data directory, the real disk store.
///
/// With `LARDER_TEST_STORE=postgres` in the environment, a server that is
/// not given a data directory of its own runs on the PostgreSQL store
/// instead, in a fresh schema of the throwaway test database
/// (`TestPostgres`): that is how the API suites run against both stores.
package final class TestServer {
    package let server: LarderServer
    package let dataDirectory: String
    package var port: Int { server.port }
    /// The S3 listener's port, when the setup turned it on (`$0.s3 = S3Configuration(port: 0)`).
    package var s3Port: Int? { server.s3?.port }
    /// The disk store the server runs on (under its fixtures, if any); nil
    /// on PostgreSQL. Set when the server opens it, in `init`.
    package var diskStore: DiskStore? { openedDiskStore.withLock { $0 } }
    private let openedDiskStore = Locked<DiskStore?>(nil)
    private var stopped = false

    /// What a test may change before the server starts: the server's own
    /// configuration (reached through this, as `$0.http.port`) and the
    /// store the test server builds from it: the disk store's options and
    /// the fixtures under it. `openStore` set: that store instead.
    @dynamicMemberLookup
    package struct Setup {
        package var configuration: LarderConfiguration
        package var store: DiskStoreOptions
        package var fixturesDirectory: String?

        package subscript<T>(dynamicMember path: WritableKeyPath<LarderConfiguration, T>) -> T {
            get { configuration[keyPath: path] }
            set { configuration[keyPath: path] = newValue }
        }

        /// Set by a test that brings its own store (the PostgreSQL suites).
        package var openStore: ValueStoreFactory? {
            get { custom }
            set { custom = newValue }
        }
        fileprivate var custom: ValueStoreFactory?
    }

    /// `configure` may change anything; the defaults are port 0, a temp
    /// directory, no fsync (durability has its own tests) and no logging.
    /// `postgresSchema`: run on the PostgreSQL store in that schema of the
    /// shared test database, whatever the environment says.
    package init(dataDirectory: String? = nil, postgresSchema: String? = nil,
         _ configure: (inout Setup) -> Void = { _ in }) throws {
        let dir = dataDirectory ?? TestServer.makeTempDirectory()
        self.dataDirectory = dir
        var setup = Setup(configuration: LarderConfiguration(storeDescription: dir, openStore: { _, _ in
            preconditionFailure("replaced below")
        }), store: DiskStoreOptions(dataDirectory: dir, fsync: false))
        setup.http.port = 0
        setup.logLevel = .critical
        configure(&setup)
        var postgres: PostgresStoreOptions?
        if let postgresSchema {
            self.postgresSchema = postgresSchema
            postgres = Self.postgresOptions(setup, schema: postgresSchema)
        } else if setup.custom == nil, Self.usesPostgres, dataDirectory == nil {
            self.postgresSchema = TestPostgres.makeSchemaName()
            postgres = Self.postgresOptions(setup, schema: self.postgresSchema!)
        }
        var config = setup.configuration
        setup.store.maxValueSize = config.http.maxBodyBytes  // one limit, as `larder` sets it
        let options = setup.store
        let opened = openedDiskStore
        var store: ValueStoreFactory = setup.custom ?? { changes, logger in
            let disk = try DiskStore(options: options, logger: logger, changes: changes)
            opened.withLock { $0 = disk }
            return disk
        }
        // On the disk store, namespaces as `larder` has them: each in
        // `<data>/ns/<name>/`, over the fixtures the default store shares.
        var namespaces: (any NamespaceStores)? = setup.custom == nil ? DiskNamespaceStores(options: options, fixtures: nil) : nil
        if let postgres {
            // On PostgreSQL, the store and its namespaces exactly as `larder` makes them.
            let stores = StoreChoice(disk: options, postgres: postgres, fixturesDirectory: setup.fixturesDirectory).stores()
            (store, namespaces) = (stores.factory, stores.namespaces)
            config.storeDescription = postgres.redactedURL
        } else if let fixtures = setup.fixturesDirectory {
            if setup.custom == nil {
                let shared = SharedFixtures(directory: fixtures, cacheDirectory: options.dataDirectory + "/fixture-cache",
                                            cacheBytes: options.cacheBytes / 4)
                namespaces = DiskNamespaceStores(options: options, fixtures: shared)
                store = { changes, logger in
                    let layered = try shared.store(logger: logger, changes: changes) { filter in
                        try DiskStore(options: options, logger: logger, changes: filter)
                    }
                    opened.withLock { $0 = layered.diskStore }
                    return layered
                }
            } else {
                store = LayeredStore.factory(fixturesDirectory: fixtures, cacheBytes: options.cacheBytes / 4, over: store)
            }
        }
        config.openStore = store
        if config.namespaceStores == nil { config.namespaceStores = namespaces }
        let logger = ProcessInfo.processInfo.environment["LARDER_TEST_LOG"] != nil
            ? Logger(label: "test") { LarderLogHandler(label: $0, level: .debug) } : Logger.silent()
        server = try LarderServer(configuration: config, logger: logger)
        try server.start()
    }

    /// Whether this run puts the API suites on PostgreSQL (`LARDER_TEST_STORE=postgres`).
    package static let usesPostgres = ProcessInfo.processInfo.environment["LARDER_TEST_STORE"] == "postgres"

    /// The schema this server's PostgreSQL store lives in; nil on the disk store.
    package private(set) var postgresSchema: String?

    /// The PostgreSQL store in `schema` of the shared test database, with
    /// `setup`'s limits (a small pool: many test servers share the
    /// database's connections).
    package static func postgresOptions(_ setup: Setup, schema: String, poolSize: Int = 4) -> PostgresStoreOptions {
        let url = try! TestPostgres.shared().url(schema: schema)
        var options = try! PostgresStoreOptions(url: url)
        options.poolSize = poolSize
        options.maxValueSize = setup.http.maxBodyBytes
        options.changeHistory = setup.eventHistory
        options.gzipLevel = setup.store.gzipLevel
        return options
    }

    /// A fresh directory in this process's scratch directory (`TestScratch`),
    /// `prefix` then a UUID: the one temp-directory maker of the tests.
    package static func makeTempDirectory(prefix: String = "larder-test-") -> String {
        _ = TestScratch.staleSwept
        let path = TestScratch.root + prefix + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    package func client() -> WireClient { WireClient(port: port) }

    /// Waits until `/metrics` says the store's start-up scan is done
    /// (`larder_store_index_ready 1`): totals exact, stale temp files gone.
    package func waitForIndex(timeout: Double = 60) throws {
        try Poll.until(timeout, "the store's start-up scan") {
            try client().send("GET", "/metrics").text.contains("\nlarder_store_index_ready 1\n")
        }
    }

    package func connection(timeout: Double = 30) throws -> HTTPClientConnection {
        try HTTPClientConnection(port: port, timeout: timeout)
    }

    /// Stops the server; keeps the data directory when `keepData` (restarts).
    package func stop(keepData: Bool = false) {
        guard !stopped else { return }
        stopped = true
        server.shutdown()
        if !keepData { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }

    deinit { stop() }
}

extension Trait where Self == ConditionTrait {
    /// A test that looks at what only the disk store has (its files, its
    /// generations, an answer given before the body is read), or a slow one
    /// that tests nothing of the store (the event buffer's backpressure):
    /// skipped when the API suites run on PostgreSQL
    /// (`LARDER_TEST_STORE=postgres`).
    package static func diskStoreOnly(_ why: String) -> Self {
        .disabled(if: TestServer.usesPostgres, Comment(rawValue: why))
    }
}
