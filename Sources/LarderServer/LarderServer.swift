import LarderApp
import LarderHTTP
import LarderRouting
import LarderS3
import LarderSharing
import LarderSupport
import LarderStorage
import FoundationEssentials

/// A running Larder, composed here: a store, the change hub, the Larder
/// API face (`LarderAPI`) on the HTTP listener and the S3 face
/// (`S3Server`) on its own, both over the same namespaces. The `larder`
/// executable and the tests both build it here, each with the store it
/// chose (`LarderConfiguration.openStore`). The faces know nothing of each
/// other: what one needs of the other (S3's namespaces, journals and fault
/// rules; its counters in `/metrics`) is handed over here.
package final class LarderServer: Sendable {
    package let configuration: LarderConfiguration
    /// What the routes read and write: the store `openStore` opened.
    package let values: any ValueStore
    package let http: HTTPServer
    /// The Larder API face, the HTTP listener's handler.
    package let api: LarderAPI
    /// The S3 listener (`--s3-port`), on the same store; nil when off.
    package let s3: S3Server?
    package let logger: Logger
    /// What the HTTP layer counts (requests, latency, bytes, connections).
    package let metrics: HTTPServerMetrics

    /// Opens the store (taking its lock) and prepares the server. Throws a
    /// `ConfigurationError` for a token or CORS origin it cannot use.
    /// `logger`: every line goes there (tests); nil: loggers from
    /// `LoggingSystem` at `configuration.logLevel`, labelled `larder`
    /// (the server and its routes), `larder.http` (connections and the
    /// access log), `larder.store` and `larder.s3`.
    package init(configuration: LarderConfiguration, logger given: Logger? = nil) throws {
        self.configuration = configuration
        func named(_ label: String) -> Logger {
            if let given { return given }
            var made = Logger(label: label)
            made.logLevel = configuration.logLevel
            return made
        }
        let logger = named("larder"), httpLogger = named("larder.http"), storeLogger = named("larder.store")
        self.logger = logger
        // Checked before the store is opened: a configuration error leaves its lock alone.
        let settings = configuration.api
        let middleware = try APIMiddleware(settings)
        if let s3 = configuration.s3 { try Self.checkNamespaces(of: s3.credentials ?? .none, stores: configuration.namespaceStores != nil) }
        let metrics = HTTPServerMetrics()
        self.metrics = metrics
        let hub = ChangeHub(historySize: configuration.eventHistory, keepAliveEvery: configuration.eventHeartbeat)
        values = try configuration.openStore(hub, storeLogger)
        let s3Counts = configuration.s3 == nil ? nil : S3RequestCounts()
        let api: LarderAPI
        do {
            api = try LarderAPI(store: values, hub: hub, settings: settings, middleware: middleware, metrics: metrics,
                                otherFaces: s3Counts.map { [S3MetricsFamilies(counts: $0)] } ?? [], logger: logger)
        } catch {
            values.close()
            throw error
        }
        self.api = api
        self.http = HTTPServer(configuration: configuration.http, handler: api.table, logger: httpLogger, metrics: metrics)
        // Its own HTTP counters: the plain API's `/metrics` figures stay its
        // own; its answers by operation are `larder_s3_requests_total`. Each
        // key works in its namespace: the default one's store, journal and
        // fault rules, or a named one's from the registry.
        let s3Logger = named("larder.s3")
        let s3Namespaces = ServerS3Namespaces(defaultNamespace: S3NamespaceView(store: values, journal: api.journal, faults: api.faults),
                                              namespaces: api.namespaces)
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
    package func start() throws {
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

    package var port: Int { http.port }

    /// `http://host:port` as bound (after `start`), for clients to use.
    package var url: String { "http://\(Self.hostForURL(configuration.http.host)):\(http.port)" }

    /// Clients waiting on `?wait` and open event streams, right now.
    package var watcherCount: Int { api.watcherCount }
    package var eventStreamCount: Int { api.eventStreamCount }

    /// Clients waiting on `/journal?wait=`, in every namespace, right now.
    package var journalWaiterCount: Int { api.journalWaiterCount }

    /// Clients waiting in named namespaces (watches, event streams, journal long polls).
    package var namespaceListenerCount: Int { api.namespaceListenerCount }

    /// Named namespaces open now (the default one not counted).
    package var namespaceCount: Int { api.namespaceCount }

    /// Stops accepting, finishes in-flight requests, closes connections.
    package func shutdown() {
        s3?.shutdown()
        http.shutdown()
        api.shutdown()
        values.close()
    }

    static func hostForURL(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
