import Foundation
import LarderApp
import LarderWire
import LarderHTTP
import LarderSupport
import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderPostgres
import Testing

/// A real Larder server in this process: real sockets on an ephemeral
/// loopback port, a fresh temp data directory, the real disk store.
///
/// With `LARDER_TEST_STORE=postgres` in the environment, a server that is
/// not given a data directory of its own runs on the PostgreSQL store
/// instead, in a fresh schema of the throwaway test database
/// (`TestPostgres`): that is how the API suites run against both stores.
final class TestServer {
    let server: LarderServer
    let dataDirectory: String
    var port: Int { server.port }
    private var stopped = false

    /// `configure` may change anything; the defaults are port 0, a temp
    /// directory, no fsync (durability has its own tests) and no logging.
    /// `postgresSchema`: run on the PostgreSQL store in that schema of the
    /// shared test database, whatever the environment says.
    init(dataDirectory: String? = nil, postgresSchema: String? = nil,
         _ configure: (inout LarderConfiguration) -> Void = { _ in }) throws {
        let dir = dataDirectory ?? TestServer.makeTempDirectory()
        self.dataDirectory = dir
        var config = LarderConfiguration(dataDirectory: dir)
        config.http.port = 0
        config.store.fsync = false
        config.logLevel = .critical
        configure(&config)
        if let postgresSchema {
            self.postgresSchema = postgresSchema
            Self.usePostgres(&config, schema: postgresSchema)
        } else if config.openStore == nil, Self.usesPostgres, dataDirectory == nil {
            self.postgresSchema = TestPostgres.makeSchemaName()
            Self.usePostgres(&config, schema: self.postgresSchema!)
        }
        let logger = ProcessInfo.processInfo.environment["LARDER_TEST_LOG"] != nil
            ? Logger(label: "test", level: .debug) : Logger.silent()
        server = try LarderServer(configuration: config, logger: logger)
        try server.start()
    }

    /// Whether this run puts the API suites on PostgreSQL (`LARDER_TEST_STORE=postgres`).
    static let usesPostgres = ProcessInfo.processInfo.environment["LARDER_TEST_STORE"] == "postgres"

    /// The schema this server's PostgreSQL store lives in; nil on the disk store.
    private(set) var postgresSchema: String?

    /// Puts `config` on the PostgreSQL store in `schema` of the shared test
    /// database, with the configuration's limits (a small pool: many test
    /// servers share the database's connections).
    static func usePostgres(_ config: inout LarderConfiguration, schema: String, poolSize: Int = 4) {
        let url = try! TestPostgres.shared().url(schema: schema)
        var options = try! PostgresStoreOptions(url: url)
        options.poolSize = poolSize
        options.maxValueSize = config.http.maxBodyBytes
        options.changeHistory = config.eventHistory
        options.gzipLevel = config.store.gzipLevel
        let chosen = options
        config.openStore = { changes, logger in try PostgresStore(options: chosen, logger: logger, changes: changes) }
    }

    static func makeTempDirectory() -> String {
        let path = NSTemporaryDirectory() + "larder-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func client() -> WireClient { WireClient(port: port) }

    /// Waits until `/metrics` says the store's start-up scan is done
    /// (`larder_store_index_ready 1`): totals exact, stale temp files gone.
    func waitForIndex(timeout: Double = 60) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try client().send("GET", "/metrics").text.contains("\nlarder_store_index_ready 1\n") { return }
            usleep(10_000)
        }
        struct IndexNotReady: Error {}
        throw IndexNotReady()
    }

    func connection(timeout: Double = 30) throws -> HTTPClientConnection {
        try HTTPClientConnection(port: port, timeout: timeout)
    }

    /// Stops the server; keeps the data directory when `keepData` (restarts).
    func stop(keepData: Bool = false) {
        guard !stopped else { return }
        stopped = true
        server.shutdown()
        if !keepData { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }

    deinit { stop() }
}

extension Trait where Self == ConditionTrait {
    /// A test that looks at what only the disk store has (its files, its
    /// generations, an answer given before the body is read): skipped when
    /// the API suites run on PostgreSQL (`LARDER_TEST_STORE=postgres`).
    static func diskStoreOnly(_ why: String) -> Self {
        .disabled(if: TestServer.usesPostgres, Comment(rawValue: why))
    }
}
