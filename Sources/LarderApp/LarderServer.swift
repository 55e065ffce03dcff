import LarderHTTP
import LarderSupport
import LarderStore

/// A running Larder: the disk store, the change hub and the HTTP server
/// wired together. The `larder` executable and the tests both build it here.
public final class LarderServer: Sendable {
    public let configuration: LarderConfiguration
    public let store: DiskStore
    public let http: HTTPServer
    public let logger: Logger
    /// What the HTTP layer counts (requests, latency, bytes, connections).
    public let metrics: HTTPServerMetrics
    let hub: ChangeHub

    /// Opens the store (taking its lock) and prepares the server. Throws a
    /// `ConfigurationError` for a token or CORS origin it cannot use.
    public init(configuration: LarderConfiguration, logger: Logger? = nil) throws {
        self.configuration = configuration
        let logger = logger ?? Logger(label: "larder", level: configuration.logLevel)
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
        chain += configuration.middleware
        let metrics = HTTPServerMetrics()
        self.metrics = metrics
        let hub = ChangeHub(historySize: configuration.eventHistory, heartbeat: configuration.eventHeartbeat)
        self.hub = hub
        var storeOptions = configuration.store
        storeOptions.maxValueSize = configuration.http.maxBodyBytes  // one limit, --max-value-size
        self.store = try DiskStore(options: storeOptions, logger: logger, changes: hub)
        var routes: [(RouteTable.Match, any Route)] = [
            (.prefix("/store/"), StoreRoutes(store: store, hub: hub, logger: logger)),
            (.exact("/store"), StoreRoutes(store: store, hub: hub, logger: logger)),
            (.exact("/events"), EventsRoute(hub: hub, maxBuffered: configuration.eventBufferBytes)),
            (.exact(HealthRoute.path), HealthRoute(store: store, logger: logger)),
            (.exact("/metrics"), MetricsRoute(http: metrics, store: store, hub: hub, startTime: Double(Clock.nowNanos()) / 1e9)),
        ]
        if let directory = configuration.publicDirectory {
            let files = StaticFiles(directory: directory)
            routes += StaticFiles.paths.map { ($0, files) }
        }
        let table = RouteTable(routes, middleware: chain)
        self.http = HTTPServer(configuration: configuration.http, handler: table, logger: logger, metrics: metrics)
    }

    /// Binds and starts serving.
    public func start() throws {
        try http.start()
        logger.always(.notice, "larder listening on http://\(Self.hostForURL(configuration.http.host)):\(http.port) with data in \(store.options.dataDirectory)")
        if configuration.token != nil {
            logger.notice("a bearer token is required (open: /healthz and the viewer)")
        }
        if !configuration.corsOrigins.isEmpty {
            logger.notice("CORS allowed for \(configuration.corsOrigins.joined(separator: ", "))")
        }
    }

    public var port: Int { http.port }

    /// Clients waiting on `?wait` and open event streams, right now.
    public var watcherCount: Int { hub.watcherCount }
    public var eventStreamCount: Int { hub.subscriberCount }

    /// Stops accepting, finishes in-flight requests, closes connections.
    public func shutdown() {
        http.shutdown()
        store.close()
    }

    static func hostForURL(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
