import LarderHTTP
import LarderLog
import LarderStore

/// A running Larder: the disk store and the HTTP server wired together.
/// The `larder` executable and the tests both build it here.
public final class LarderServer: Sendable {
    public let configuration: LarderConfiguration
    public let store: DiskStore
    public let http: HTTPServer
    public let logger: Logger

    /// Opens the store (taking its lock) and prepares the server.
    public init(configuration: LarderConfiguration, logger: Logger? = nil) throws {
        self.configuration = configuration
        let logger = logger ?? Logger(label: "larder", level: configuration.logLevel)
        self.logger = logger
        var storeOptions = configuration.store
        storeOptions.maxValueSize = configuration.http.maxBodyBytes  // one limit, --max-value-size
        self.store = try DiskStore(options: storeOptions, logger: logger)
        let router = LarderRouter(store: store, publicDirectory: configuration.publicDirectory, logger: logger)
        self.http = HTTPServer(configuration: configuration.http, handler: router, logger: logger)
    }

    /// Binds and starts serving.
    public func start() throws {
        try http.start()
        logger.always(.notice, "larder listening on http://\(Self.hostForURL(configuration.http.host)):\(http.port) with data in \(store.options.dataDirectory)")
    }

    public var port: Int { http.port }

    /// Stops accepting, finishes in-flight requests, closes connections.
    public func shutdown() {
        http.shutdown()
        store.close()
    }

    static func hostForURL(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
