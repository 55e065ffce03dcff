import LarderHTTP
import LarderSupport
import LarderStore

/// A running Larder: the disk store, the change hub and the HTTP server
/// wired together. The `larder` executable and the tests both build it here.
public final class LarderServer: Sendable {
    public let configuration: LarderConfiguration
    /// The writable store (under `values` when fixtures are mounted).
    public let store: DiskStore
    /// What the routes read and write: the store, or the store over its fixtures.
    public let values: any ValueStore
    public let http: HTTPServer
    public let logger: Logger
    let hub: ChangeHub

    /// Opens the store (taking its lock) and prepares the server.
    public init(configuration: LarderConfiguration, logger: Logger? = nil) throws {
        self.configuration = configuration
        let logger = logger ?? Logger(label: "larder", level: configuration.logLevel)
        self.logger = logger
        let hub = ChangeHub(historySize: configuration.eventHistory, heartbeat: configuration.eventHeartbeat)
        self.hub = hub
        var storeOptions = configuration.store
        storeOptions.maxValueSize = configuration.http.maxBodyBytes  // one limit, --max-value-size
        if let fixtures = configuration.fixturesDirectory {
            let layered = try LayeredStore(options: storeOptions, fixturesDirectory: fixtures, logger: logger, changes: hub)
            (store, values) = (layered.store, layered)
        } else {
            store = try DiskStore(options: storeOptions, logger: logger, changes: hub)
            values = store
        }
        let storeRoutes = StoreRoutes(store: values, hub: hub, logger: logger)
        var routes: [(RouteTable.Match, any Route)] = [
            (.prefix("/store/"), storeRoutes),
            (.exact("/store"), storeRoutes),
            (.exact("/events"), EventsRoute(hub: hub, maxBuffered: configuration.eventBufferBytes)),
            (.exact("/healthz"), HealthRoute(store: values, logger: logger)),
            (.exact("/snapshot"), SnapshotRoute(store: values, maxValueBytes: configuration.http.maxBodyBytes, logger: logger)),
        ]
        if let directory = configuration.publicDirectory {
            let files = StaticFiles(directory: directory)
            routes += [(.exact("/"), files), (.exact("/viewer"), files), (.prefix("/viewer/"), files)]
        }
        // The middleware chain, outermost first:
        // 1. metrics: sees every answer, 401s and faults included;
        // 2. CORS: answers a preflight before auth (browsers send no token
        //    with it) and puts its headers on every answer, 401s too;
        // 3. token auth: refuses before a body is read;
        // 4. faults: only an authorised request is faulted;
        // then the configuration's own middleware.
        var chain: [any LarderMiddleware] = []
        if configuration.allowFaults {
            let faults = FaultBook()
            routes.append((.exact("/faults"), FaultsRoute(book: faults)))
            chain.append(FaultMiddleware(book: faults))
        }
        chain += configuration.middleware
        let table = RouteTable(routes, middleware: chain)
        self.http = HTTPServer(configuration: configuration.http, handler: table, logger: logger)
    }

    /// Binds and starts serving.
    public func start() throws {
        try http.start()
        logger.always(.notice, "larder listening on \(url) with data in \(store.options.dataDirectory)")
    }

    public var port: Int { http.port }

    /// `http://host:port` as bound (after `start`), for clients to use.
    public var url: String { "http://\(Self.hostForURL(configuration.http.host)):\(http.port)" }

    /// Clients waiting on `?wait` and open event streams, right now.
    public var watcherCount: Int { hub.watcherCount }
    public var eventStreamCount: Int { hub.subscriberCount }

    /// Stops accepting, finishes in-flight requests, closes connections.
    public func shutdown() {
        http.shutdown()
        values.close()
    }

    static func hostForURL(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
