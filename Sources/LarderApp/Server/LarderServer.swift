import LarderHTTP
import LarderS3
import LarderSharing
import LarderSupport
import LarderStorage
import LarderValueFile
import Foundation

/// A running Larder: a store, the change hub and the HTTP server wired
/// together. The `larder` executable and the tests both build it here,
/// each with the store it chose (`LarderConfiguration.openStore`).
public final class LarderServer: Sendable {
    public let configuration: LarderConfiguration
    /// What the routes read and write: the store `openStore` opened.
    public let values: any ValueStore
    public let http: HTTPServer
    /// The S3 listener (`--s3-port`), on the same store; nil when off.
    public let s3: S3Server?
    public let logger: Logger
    /// What the HTTP layer counts (requests, latency, bytes, connections).
    public let metrics: HTTPServerMetrics
    let hub: ChangeHub
    /// The default namespace's request journal (nil with `--journal 0`).
    let journal: RequestJournal?
    /// The named namespaces (`/ns/<name>/`); nil when the store has none.
    let namespaces: Namespaces?

    /// Opens the store (taking its lock) and prepares the server. Throws a
    /// `ConfigurationError` for a token or CORS origin it cannot use.
    /// `logger`: every line goes there (tests); nil: loggers from
    /// `LoggingSystem` at `configuration.logLevel`, labelled `larder`
    /// (the server and its routes), `larder.http` (connections and the
    /// access log) and `larder.store`.
    public init(configuration: LarderConfiguration, logger given: Logger? = nil) throws {
        self.configuration = configuration
        func named(_ label: String) -> Logger {
            if let given { return given }
            var made = Logger(label: label)
            made.logLevel = configuration.logLevel
            return made
        }
        let logger = named("larder"), httpLogger = named("larder.http"), storeLogger = named("larder.store")
        self.logger = logger
        // The middleware chain, outermost first (built before the store is
        // opened, so a configuration error leaves its lock alone). Metrics
        // are no link of it: the HTTP layer counts every answer, also those
        // given before any middleware runs (400, 408, 413, 431, 503).
        // 1. CORS: answers a preflight before auth (browsers send no token
        //    with it) and puts its headers on every answer, 401s too;
        // 2. token auth: refuses before a body is read;
        // 3. faults: only an authorised request is faulted;
        // then the configuration's own middleware.
        var chain: [any LarderMiddleware] = []
        if !configuration.corsOrigins.isEmpty {
            chain.append(try CORS(origins: configuration.corsOrigins, tokenRequired: configuration.token != nil))
        }
        if let token = configuration.token { chain.append(try TokenAuth(token: token)) }
        // Counted for the whole server, every namespace's rules too.
        let faultCounts = configuration.allowFaults ? FaultCounts() : nil
        let faults = faultCounts.map { FaultBook(counts: $0) }
        if let faults { chain.append(FaultMiddleware(book: faults)) }
        chain += configuration.middleware
        if let s3 = configuration.s3 { try Self.checkNamespaces(of: s3.credentials ?? .none, stores: configuration.namespaceStores != nil) }
        let metrics = HTTPServerMetrics()
        self.metrics = metrics
        let hub = ChangeHub(historySize: configuration.eventHistory, keepAliveEvery: configuration.eventHeartbeat)
        self.hub = hub
        values = try configuration.openStore(hub, storeLogger)
        let sequence = JournalSequence()
        let journal = configuration.journal > 0 ? RequestJournal(capacity: configuration.journal, sequence: sequence) : nil
        self.journal = journal
        var routes = APIRoutes.make(store: values, hub: hub, faults: faults, journal: journal,
                                    configuration: configuration, logger: logger)
        let apiRouteCount = routes.count
        let namespaces: Namespaces?
        do {
            namespaces = try configuration.namespaceStores.map { stores in
                try Namespaces(stores: stores, limit: configuration.maxNamespaces, idleSeconds: configuration.namespaceIdleSeconds,
                               logger: logger) { name, open in
                    try APIRoutes.world(name, configuration: configuration, journalSequence: sequence, logger: logger,
                                        faultCounts: faultCounts, open: open)
                }
            }
        } catch {
            values.close()
            throw error
        }
        self.namespaces = namespaces
        let s3Counts = configuration.s3 == nil ? nil : S3RequestCounts()
        routes.append((.exact("/metrics"), MetricsRoute(http: metrics, store: values, hub: hub, namespaces: namespaces, faults: faultCounts,
                                                        s3: s3Counts, startTime: Double(Clock.nowNanos()) / 1e9)))
        let files = StaticFiles(files: configuration.publicDirectory.map { .directory($0) } ?? .embedded)
        routes += StaticFiles.paths.map { ($0, files) }
        // Right after the store's routes: a request for a new namespace is
        // found third, and a default one is looked at as before. (One for a
        // namespace that exists is served before the lookup: the table is
        // given `namespaces`.)
        let namespaceRoute = NamespaceRoute(namespaces: namespaces, paths: routes.prefix(apiRouteCount).map(\.0))
        routes.insert(contentsOf: [(.prefix(NamespacePath.prefix), namespaceRoute), (.exact("/ns"), namespaceRoute)], at: 2)
        // The journal before the chain: it records what the client got,
        // answers of the chain's links (a preflight, a 401, a fault) included.
        let table = RouteTable(routes, middleware: chain, namespaces: namespaces,
                               journal: journal.map { JournalAttachment(journal: $0, namespaces: namespaces) })
        self.http = HTTPServer(configuration: configuration.http, handler: table, logger: httpLogger, metrics: metrics)
        // Its own HTTP counters: the plain API's `/metrics` figures stay its
        // own; its answers by operation are `larder_s3_requests_total`. Each
        // key works in its namespace: the default one's store, journal and
        // fault rules, or a named one's from the registry.
        let s3Logger = named("larder.s3")
        let s3Namespaces = ServerS3Namespaces(defaultNamespace: S3NamespaceView(store: values, journal: journal, faults: faults),
                                              namespaces: namespaces)
        self.s3 = configuration.s3.map {
            S3Server(configuration: $0, http: configuration.http, namespaces: s3Namespaces,
                     tokenRequired: configuration.token != nil, logger: s3Logger,
                     requestCounts: s3Counts ?? S3RequestCounts())
        }
    }

    /// The namespaces S3 keys are bound to are namespace names, on a store
    /// that has namespaces: refused at start, not at a worker's first request.
    static func checkNamespaces(of credentials: S3Credentials, stores: Bool) throws(ConfigurationError) {
        for (key, name) in credentials.namespaces.sorted(by: { $0.key < $1.key }) {
            guard (try? NamespaceName.check(name[...])) != nil else {
                throw ConfigurationError("S3 access key \(key): '\(name)' is not a namespace name "
                                         + "(1 to \(NamespaceName.maxBytes) bytes of A-Z a-z 0-9 _ . -, not . or ..)")
            }
            guard stores else {
                throw ConfigurationError("S3 access key \(key) is bound to namespace \(name), but this server's store has no namespaces")
            }
        }
    }

    /// Binds and starts serving.
    public func start() throws {
        try http.start()
        logger.always(.notice, "larder listening on \(url) with data in \(configuration.storeDescription)")
        if let s3 {
            do { try s3.start() } catch { http.shutdown(); throw error }
            logger.always(.notice, "S3 listening on http://\(Self.hostForURL(configuration.http.host)):\(s3.port)")
            if s3.configuration.refusesEveryRequest(tokenRequired: configuration.token != nil) {
                logger.always(.warning, """
                    S3: a token is required and no S3 access keys are configured, so the default key \
                    \(S3Credentials.defaultAccessKey) is off and every S3 request is refused (403 InvalidAccessKeyId); \
                    give --s3-credentials FILE, or LARDER_S3_ACCESS_KEY and LARDER_S3_SECRET_KEY
                    """)
            }
        }
        if configuration.token != nil {
            logger.notice("a bearer token is required (open: /healthz and the viewer)")
        }
        if !configuration.corsOrigins.isEmpty {
            logger.notice("CORS allowed for \(configuration.corsOrigins.joined(separator: ", "))")
        }
    }

    public var port: Int { http.port }

    /// `http://host:port` as bound (after `start`), for clients to use.
    public var url: String { "http://\(Self.hostForURL(configuration.http.host)):\(http.port)" }

    /// Clients waiting on `?wait` and open event streams, right now.
    public var watcherCount: Int { hub.watcherCount }
    public var eventStreamCount: Int { hub.subscriberCount }

    /// Clients waiting on `/journal?wait=`, in every namespace, right now.
    public var journalWaiterCount: Int { (journal?.waiterCount ?? 0) + (namespaces?.journalWaiterCount ?? 0) }

    /// Named namespaces open now (the default one not counted).
    public var namespaceCount: Int { namespaces?.count ?? 0 }

    /// Stops accepting, finishes in-flight requests, closes connections.
    public func shutdown() {
        s3?.shutdown()
        http.shutdown()
        namespaces?.shutdown()
        values.close()
    }

    static func hostForURL(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
