import ArgumentParser
import Dispatch
import FoundationEssentials
import LarderApp
import LarderRouting
import LarderServer
import LarderBackends
import LarderHTTP
import LarderModel
import LarderSupport
import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderPostgres
import LarderS3
#if canImport(Glibc)
import Glibc
#endif

/// `larder [options]` and `larder serve [options]` both start the server,
/// so `larder --help` shows every option. `larder healthcheck` checks a
/// running one (Healthcheck.swift).
struct Larder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "larder",
        abstract: "A local HTTP/1.1 storage server: values by key over plain HTTP, gzip files on disk.",
        discussion: "Every option can also be set with the environment variable named in its help; the flag wins.",
        version: LarderVersion.current,
        subcommands: [Serve.self, Healthcheck.self]
    )

    @OptionGroup var options: ServeOptions

    func run() throws { try options.serve() }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the server (the same as `larder` with no subcommand).",
        discussion: "Every option can also be set with the environment variable named in its help; the flag wins."
    )

    @OptionGroup var options: ServeOptions

    func run() throws { try options.serve() }
}

/// The defaults each flag's help shows are read from the configuration
/// types, where they are set: written once, so the help tells the truth.
private enum Default {
    static let http = HTTPServerConfiguration.defaults

    /// Seconds as the help shows them: 10, not 10.0.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

struct ServeOptions: ParsableArguments {
    @Option(help: "Address to bind. [env: LARDER_HOST] (default: \(Default.http.host))")
    var host: String?

    @Option(help: "TCP port; 0 picks a free one (the first line on stdout is the server's URL). [env: LARDER_PORT] (default: \(Default.http.port))")
    var port: Int?

    @Option(name: .customLong("data-dir"), help: "Data directory. [env: LARDER_DATA_DIR] (default: \(DiskStoreOptions.defaultDataDirectory))")
    var dataDir: String?

    @Option(help: "Where values live: a PostgreSQL URL (postgres://user:pass@host:port/db, optional ?schema=name, default larder) shares one database between several larder servers; without it, the disk store in --data-dir. [env: LARDER_STORE]")
    var store: String?

    @Option(name: .customLong("pg-pool"), help: "Database connections at most, with --store postgres://. [env: LARDER_PG_POOL] (default: \(PostgresStoreOptions.defaultPoolSize))")
    var pgPool: Int?

    @Option(name: .customLong("pg-timeout"), help: "Seconds a database call may go unanswered (a statement, a wait for a free connection) before its request gets 503 backend_unavailable; a COMMIT gets six times it. With --store postgres://. [env: LARDER_PG_TIMEOUT] (default: \(Default.seconds(PostgresStoreOptions.defaultCommandTimeout)))")
    var pgTimeout: Double?

    @Option(name: .customLong("pg-cache-mb"), help: "MiB of small values each server keeps in memory for reads with --store postgres://; a cached read may miss a write through another server for as long as the change feed takes to bring it (milliseconds; at most about 2 s). 0 reads every value from the database. [env: LARDER_PG_CACHE_MB] (default: 0)")
    var pgCacheMB: Int?

    @Option(help: "Directory of read-only fixtures: each file is the value of the key named by its path, shown when the store has none. [env: LARDER_FIXTURES]")
    var fixtures: String?

    @Flag(name: .customLong("ephemeral"), help: "Keep the data in a fresh temporary directory, removed at exit (a test run's server). Not with --data-dir. [env: LARDER_EPHEMERAL=1]")
    var ephemeral = false

    @Flag(name: .customLong("no-fsync"), help: "Skip fsync before acknowledging writes (fast, for tests). [env: LARDER_NO_FSYNC=1]")
    var noFsync = false

    @Option(name: .customLong("gzip-level"), help: "zlib level 1-9 for stored values. [env: LARDER_GZIP_LEVEL] (default: \(CompressionMode.defaultGzipLevel))")
    var gzipLevel: Int?

    @Option(name: .customLong("max-value-size"), help: "Largest value in bytes (413 above). [env: LARDER_MAX_VALUE_SIZE] (default: \(Default.http.maxBodyBytes))")
    var maxValueSize: Int64?

    @Option(name: .customLong("max-request-line"), help: "Longest request line in bytes (414 above). [env: LARDER_MAX_REQUEST_LINE] (default: \(Default.http.maxRequestLineBytes))")
    var maxRequestLine: Int?

    @Option(name: .customLong("max-header-bytes"), help: "Largest header section in bytes (431 above). [env: LARDER_MAX_HEADER_BYTES] (default: \(Default.http.maxHeaderBytes))")
    var maxHeaderBytes: Int?

    @Option(name: .customLong("header-timeout"), help: "Seconds to receive a request head (408 after). [env: LARDER_HEADER_TIMEOUT] (default: \(Default.seconds(Default.http.headerTimeout)))")
    var headerTimeout: Double?

    @Option(name: .customLong("idle-timeout"), help: "Seconds an idle keep-alive connection or a stalled body/reader is kept. [env: LARDER_IDLE_TIMEOUT] (default: \(Default.seconds(Default.http.idleTimeout)))")
    var idleTimeout: Double?

    @Option(name: .customLong("max-connections"), help: "Open connections at most (503 above). [env: LARDER_MAX_CONNECTIONS] (default: \(Default.http.maxConnections))")
    var maxConnections: Int?

    @Option(name: .customLong("log-level"), help: "trace, debug, info (one line per request), notice, warning, error, critical. [env: LARDER_LOG_LEVEL] (default: \(LarderConfiguration.defaultLogLevel))")
    var logLevel: String?

    @Option(name: .customLong("cache-mb"), help: "MiB of small values kept in memory for reads; 0 turns the cache off. [env: LARDER_CACHE_MB] (default: \(DiskStoreOptions.defaultCacheBytes >> 20))")
    var cacheMB: Int?

    @Option(name: .customLong("event-history"), help: "Recent changes kept for Last-Event-ID replay on /events. [env: LARDER_EVENT_HISTORY] (default: \(ServerDefaults.changeHistory))")
    var eventHistory: Int?

    @Option(name: .customLong("event-buffer-kb"), help: "KiB an /events reader may fall behind before it is dropped. [env: LARDER_EVENT_BUFFER_KB] (default: \(LarderConfiguration.defaultEventBufferBytes >> 10))")
    var eventBufferKB: Int?

    @Flag(name: .customLong("allow-faults"), help: "Serve /faults: rules that delay requests or answer them with an error, for testing clients. [env: LARDER_ALLOW_FAULTS=1]")
    var allowFaults = false

    @Option(name: .customLong("public-dir"), help: "Serve the browser viewer from this directory instead of the copy built in (for working on it). [env: LARDER_PUBLIC_DIR]")
    var publicDir: String?

    @Option(help: "Bearer token every request needs, but /healthz and the viewer (a flag shows in ps: prefer --token-file). [env: LARDER_TOKEN]")
    var token: String?

    @Option(name: .customLong("token-file"), help: "File holding the token (a trailing newline is dropped). [env: LARDER_TOKEN_FILE]")
    var tokenFile: String?

    @Option(name: .customLong("cors-origin"),
            help: "Origin whose pages may call the server (scheme://host[:port]), or *; repeat for more. [env: LARDER_CORS_ORIGIN, comma-separated] (default: CORS off)")
    var corsOrigin: [String] = []

    @Option(name: .customLong("max-namespaces"), help: "Namespaces (/ns/<name>/) at most, the default one not counted (507 above). [env: LARDER_MAX_NAMESPACES] (default: \(LarderConfiguration.defaultMaxNamespaces))")
    var maxNamespaces: Int?

    @Option(name: .customLong("journal"), help: "Answered requests each namespace's journal (/journal) keeps; 0 turns it off. [env: LARDER_JOURNAL] (default: \(LarderConfiguration.defaultJournal))")
    var journal: Int?

    @Option(name: .customLong("namespace-idle"), help: "Seconds without a request after which a namespace is dropped; 0 never drops one. [env: LARDER_NAMESPACE_IDLE] (default: \(Default.seconds(LarderConfiguration.defaultNamespaceIdleSeconds)))")
    var namespaceIdle: Double?

    @Option(name: .customLong("s3-port"), help: "Also serve the S3-compatible API on this port (same host and store; 0 picks a free one). [env: LARDER_S3_PORT] (default: off)")
    var s3Port: Int?

    @Option(name: .customLong("s3-credentials"), help: "File of S3 access keys, one 'ACCESS_KEY SECRET [NAMESPACE]' a line (a key with a NAMESPACE works in that namespace); else LARDER_S3_ACCESS_KEY and LARDER_S3_SECRET_KEY, else the pair \(S3Credentials.defaultAccessKey)/\(S3Credentials.defaultSecretKey), which is off when a token is set. [env: LARDER_S3_CREDENTIALS]")
    var s3Credentials: String?

    func validate() throws {
        let env = ProcessInfo.processInfo.environment
        if let level = gzipLevel ?? env["LARDER_GZIP_LEVEL"].flatMap({ Int($0) }), !(1...9).contains(level) {
            throw ValidationError("--gzip-level must be from 1 to 9")
        }
        if let name = logLevel ?? env["LARDER_LOG_LEVEL"], Logger.Level(name: name) == nil {
            throw ValidationError("--log-level must be one of: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let http = try makeConfiguration().http
        for (name, seconds) in [("--header-timeout", http.headerTimeout), ("--idle-timeout", http.idleTimeout)]
        where !(seconds > 0 && seconds <= 86_400) {
            throw ValidationError("\(name) must be more than 0 and at most 86400 seconds")
        }
        for (name, value, most) in [("--max-request-line", http.maxRequestLineBytes, 1 << 20),
                                    ("--max-header-bytes", http.maxHeaderBytes, 1 << 20),
                                    ("--max-connections", http.maxConnections, 1_000_000)] where !(1...most).contains(value) {
            throw ValidationError("\(name) must be from 1 to \(most)")
        }
        if let mb = try value(cacheMB, "LARDER_CACHE_MB", { Int($0) }), !(0...65_536).contains(mb) {
            throw ValidationError("--cache-mb must be from 0 to 65536")
        }
        if let n = try value(eventHistory, "LARDER_EVENT_HISTORY", { Int($0) }), !(1...10_000_000).contains(n) {
            throw ValidationError("--event-history must be from 1 to 10000000")
        }
        if let n = try value(eventBufferKB, "LARDER_EVENT_BUFFER_KB", { Int($0) }), !(16...1_048_576).contains(n) {
            throw ValidationError("--event-buffer-kb must be from 16 to 1048576")
        }
        if let n = try value(maxNamespaces, "LARDER_MAX_NAMESPACES", { Int($0) }), !(0...1_000_000).contains(n) {
            throw ValidationError("--max-namespaces must be from 0 to 1000000")
        }
        if let n = try value(journal, "LARDER_JOURNAL", { Int($0) }), !(0...10_000_000).contains(n) {
            throw ValidationError("--journal must be from 0 to 10000000")
        }
        if let s = try value(namespaceIdle, "LARDER_NAMESPACE_IDLE", { Double($0) }), !(s >= 0 && s <= 31_536_000) {
            throw ValidationError("--namespace-idle must be from 0 to 31536000 seconds")
        }
        if http.maxBodyBytes < 0 { throw ValidationError("--max-value-size must not be negative") }
        if token != nil && tokenFile != nil { throw ValidationError("give --token or --token-file, not both") }
        if token == nil && tokenFile == nil, env["LARDER_TOKEN"]?.isEmpty == false, env["LARDER_TOKEN_FILE"]?.isEmpty == false {
            throw ValidationError("set LARDER_TOKEN or LARDER_TOKEN_FILE, not both")
        }
        if !(0...65_535).contains(http.port) { throw ValidationError("--port must be from 0 to 65535") }
        if let p = try value(s3Port, "LARDER_S3_PORT", { Int($0) }), !(0...65_535).contains(p) {
            throw ValidationError("--s3-port must be from 0 to 65535")
        }
        if let n = try value(pgPool, "LARDER_PG_POOL", { Int($0) }), !(1...1000).contains(n) {
            throw ValidationError("--pg-pool must be from 1 to 1000")
        }
        if let n = try value(pgCacheMB, "LARDER_PG_CACHE_MB", { Int($0) }), !(0...1_048_576).contains(n) {
            throw ValidationError("--pg-cache-mb must be from 0 to 1048576")
        }
        if let t = try value(pgTimeout, "LARDER_PG_TIMEOUT", { Double($0) }), !(t >= 0.1 && t <= 3600) {
            throw ValidationError("--pg-timeout must be from 0.1 to 3600 seconds")
        }
        if let url = try value(store, "LARDER_STORE", { $0 }) {
            do { _ = try PostgresStoreOptions(url: url) } catch { throw ValidationError("\(error)") }
            if try isEphemeral() { throw ValidationError("--ephemeral keeps data in a temporary directory; it cannot be used with --store") }
        }
        _ = try isEphemeral()
    }

    /// Whether the data goes to a temporary directory. `--ephemeral` and
    /// `--data-dir` both choose where the data lives, so naming both is an
    /// error, and (as everywhere) a flag beats the other's environment variable.
    func isEphemeral() throws -> Bool {
        let env = ProcessInfo.processInfo.environment
        if ephemeral && dataDir != nil {
            throw ValidationError("--ephemeral and --data-dir cannot be used together: --ephemeral makes its own data directory")
        }
        if ephemeral { return true }
        if dataDir != nil { return false }
        let fromEnvironment = Self.isSet(env["LARDER_EPHEMERAL"])
        if fromEnvironment, let dir = env["LARDER_DATA_DIR"], !dir.isEmpty {
            throw ValidationError("LARDER_EPHEMERAL and LARDER_DATA_DIR cannot be used together: ephemeral makes its own data directory")
        }
        return fromEnvironment
    }

    /// The flag's value, else the environment variable's, else nil.
    private func value<T>(_ flag: T?, _ name: String, _ parse: (String) -> T?) throws -> T? {
        if let flag { return flag }
        guard let text = ProcessInfo.processInfo.environment[name], !text.isEmpty else { return nil }
        guard let parsed = parse(text) else { throw ValidationError("\(name)='\(text)' is not valid") }
        return parsed
    }

    /// The server's configuration from the flags and environment;
    /// `dataDirectory` (an `--ephemeral` one) replaces `--data-dir`.
    func makeConfiguration(dataDirectory: String? = nil) throws -> LarderConfiguration {
        let env = ProcessInfo.processInfo.environment
        var http = HTTPServerConfiguration()
        if let v = try value(maxValueSize, "LARDER_MAX_VALUE_SIZE", { Int64($0) }) { http.maxBodyBytes = v }
        let eventHistory = try value(eventHistory, "LARDER_EVENT_HISTORY", { Int($0) })
        var disk = DiskStoreOptions(dataDirectory: try dataDirectory ?? value(dataDir, "LARDER_DATA_DIR", { $0 }) ?? DiskStoreOptions.defaultDataDirectory)
        disk.fsync = !(noFsync || Self.isSet(env["LARDER_NO_FSYNC"]))
        if let v = try value(gzipLevel, "LARDER_GZIP_LEVEL", { Int($0) }) { disk.gzipLevel = Int32(v) }
        if let v = try value(cacheMB, "LARDER_CACHE_MB", { Int($0) }) { disk.cacheBytes = max(0, v) << 20 }
        disk.maxValueSize = http.maxBodyBytes  // one limit, --max-value-size
        var choice = StoreChoice(disk: disk, fixturesDirectory: try value(fixtures, "LARDER_FIXTURES", { $0 }))
        if let url = try value(store, "LARDER_STORE", { $0 }) {
            var options: PostgresStoreOptions
            do { options = try PostgresStoreOptions(url: url) } catch { throw ValidationError("\(error)") }
            if let n = try value(pgPool, "LARDER_PG_POOL", { Int($0) }) { options.poolSize = n }
            if let t = try value(pgTimeout, "LARDER_PG_TIMEOUT", { Double($0) }) { options.commandTimeout = t }
            if let n = try value(pgCacheMB, "LARDER_PG_CACHE_MB", { Int($0) }) { options.cacheBytes = n << 20 }
            options.gzipLevel = disk.gzipLevel
            options.maxValueSize = http.maxBodyBytes
            if let eventHistory { options.changeHistory = eventHistory }
            choice.postgres = options
        }
        let stores = choice.stores()
        var config = LarderConfiguration(storeDescription: choice.description, openStore: stores.factory)
        config.namespaceStores = stores.namespaces
        if let v = try value(maxNamespaces, "LARDER_MAX_NAMESPACES", { Int($0) }) { config.maxNamespaces = v }
        if let v = try value(namespaceIdle, "LARDER_NAMESPACE_IDLE", { Double($0) }) { config.namespaceIdleSeconds = v }
        if let v = try value(journal, "LARDER_JOURNAL", { Int($0) }) { config.journal = v }
        config.http = http
        if let eventHistory { config.eventHistory = eventHistory }
        if let v = try value(host, "LARDER_HOST", { $0 }) { config.http.host = v }
        if let v = try value(port, "LARDER_PORT", { Int($0) }) { config.http.port = v }
        config.allowFaults = allowFaults || Self.isSet(env["LARDER_ALLOW_FAULTS"])
        if let v = try value(maxRequestLine, "LARDER_MAX_REQUEST_LINE", { Int($0) }) { config.http.maxRequestLineBytes = v }
        if let v = try value(maxHeaderBytes, "LARDER_MAX_HEADER_BYTES", { Int($0) }) { config.http.maxHeaderBytes = v }
        if let v = try value(headerTimeout, "LARDER_HEADER_TIMEOUT", { Double($0) }) { config.http.headerTimeout = v }
        if let v = try value(idleTimeout, "LARDER_IDLE_TIMEOUT", { Double($0) }) { config.http.idleTimeout = v }
        if let v = try value(maxConnections, "LARDER_MAX_CONNECTIONS", { Int($0) }) { config.http.maxConnections = v }
        if let v = try value(eventBufferKB, "LARDER_EVENT_BUFFER_KB", { Int($0) }) { config.eventBufferBytes = v << 10 }
        if let name = try value(logLevel, "LARDER_LOG_LEVEL", { Logger.Level(name: $0) == nil ? nil : $0 }) {
            config.logLevel = Logger.Level(name: name)!
        }
        if let v = try value(token, "LARDER_TOKEN", { $0 }) {
            config.token = v
        } else if let path = try value(tokenFile, "LARDER_TOKEN_FILE", { $0 }) {
            config.token = try Self.readToken(path)
        }
        if !corsOrigin.isEmpty {
            config.corsOrigins = corsOrigin
        } else if let list = env["LARDER_CORS_ORIGIN"] {
            config.corsOrigins = list.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        }
        if let v = try value(publicDir, "LARDER_PUBLIC_DIR", { $0 }) { config.publicDirectory = v }
        if let port = try value(s3Port, "LARDER_S3_PORT", { Int($0) }) {
            config.s3 = S3Configuration(port: port, credentials: try s3CredentialsFromOptions())
        }
        return config
    }

    /// The S3 keys: `--s3-credentials` (or its variable), else the pair in
    /// LARDER_S3_ACCESS_KEY/LARDER_S3_SECRET_KEY (both or neither); nil:
    /// none given (the server then takes the documented default pair,
    /// unless it requires a token: `S3Configuration.acceptedKeys`).
    func s3CredentialsFromOptions() throws -> S3Credentials? {
        let env = ProcessInfo.processInfo.environment
        let access = env["LARDER_S3_ACCESS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let secret = env["LARDER_S3_SECRET_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        if let path = try value(s3Credentials, "LARDER_S3_CREDENTIALS", { $0 }) {
            if access != nil || secret != nil {
                throw ValidationError("give --s3-credentials or LARDER_S3_ACCESS_KEY/LARDER_S3_SECRET_KEY, not both")
            }
            do { return try S3Credentials.load(path: path) } catch { throw ValidationError("\(error)") }
        }
        switch (access, secret) {
        case let (a?, s?): return S3Credentials(keys: [a: s])
        case (nil, nil): return nil
        default: throw ValidationError("set both LARDER_S3_ACCESS_KEY and LARDER_S3_SECRET_KEY, or neither")
        }
    }

    /// An on/off environment variable: on for `1`, `true` or `yes`.
    static func isSet(_ value: String?) -> Bool {
        value.map { ["1", "true", "yes"].contains($0.lowercased()) } ?? false
    }

    /// The token in the file at `path`: its contents without the trailing
    /// newline (`echo secret > file` writes one). The token's own rules are
    /// checked when the server starts.
    static func readToken(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read the token file \(path)")
        }
        var text = String(decoding: data, as: UTF8.self)
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
        guard !text.isEmpty else { throw ValidationError("the token file \(path) is empty") }
        return text
    }

    func serve() throws {
        signal(SIGPIPE, SIG_IGN)
        raiseOpenFileLimit()
        // Larder's own lines on stderr for every logger of the process (one
        // bootstrap per process: the executable's, never the libraries').
        let ephemeralDirectory = try isEphemeral() ? try EphemeralDirectory() : nil
        let config: LarderConfiguration
        do {
            config = try makeConfiguration(dataDirectory: ephemeralDirectory?.path)
        } catch {
            ephemeralDirectory?.remove()
            throw error
        }
        let level = config.logLevel
        LoggingSystem.bootstrap { label in LarderLogHandler(label: label, level: level) }
        let server: LarderServer
        do {
            server = try LarderServer(configuration: config)
            try server.start()
        } catch {
            StandardError.write("larder: \(error)\n")
            ephemeralDirectory?.remove()
            Glibc.exit(1)
        }
        // The URL, alone on the first line of stdout (logs go to stderr), so
        // a harness that started us with --port 0 reads where we are. One
        // write(2), so nothing waits in a buffer; a failure (nobody reading)
        // is not a reason to stop serving.
        let line = Array((server.url + "\n").utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress!, $0.count) }
        // SIGINT/SIGTERM: stop accepting, finish in-flight requests, exit 0.
        // Both are blocked in every thread since start-up, so one sent at any
        // moment (even before this line) waits here for sigwait. Later ones
        // stay pending: they do not start a second stop.
        var signals = stopSignals()
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        server.logger.notice("signal \(received): shutting down")
        server.shutdown()
        ephemeralDirectory?.remove()
        server.logger.notice("stopped")
        Glibc.exit(0)
    }
}

/// Every connection is a file descriptor: allow as many as the hard limit.
func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// SIGINT and SIGTERM, the signals that stop the server.
func stopSignals() -> sigset_t {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    return signals
}

/// Blocks the stop signals in the main thread before any other thread
/// exists, so every thread inherits the mask and a stop signal is only ever
/// taken by `sigwait` in `serve`: one that comes early (a harness stopping
/// the server as soon as it has read the URL) waits instead of killing the
/// process before it can clean up, and is never consumed anywhere else.
/// (Dispatch signal sources had both races: the source registers its
/// signalfd on another thread some time after `resume`, and `dispatchMain`
/// parks the main thread in `sigsuspend` with every signal unblocked.)
func blockStopSignals() {
    var signals = stopSignals()
    pthread_sigmask(SIG_BLOCK, &signals, nil)
}

blockStopSignals()
Larder.main()
