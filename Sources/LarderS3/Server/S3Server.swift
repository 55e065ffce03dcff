import LarderHTTP
import LarderStorage
import LarderSupport

/// The S3 listener: a second `HTTPServer` on its own port whose handler
/// is the S3 route table, over the store the plain API serves. Started and
/// stopped with the server that owns it (`LarderServer.s3`).
public final class S3Server: Sendable {
    public let configuration: S3Configuration
    public let http: HTTPServer

    /// `http`: the plain server's settings (host, limits, timeouts); the
    /// listener takes them with its own port.
    public init(configuration: S3Configuration, http settings: HTTPServerConfiguration, store: any ValueStore, logger: Logger,
                metrics: HTTPServerMetrics = HTTPServerMetrics()) {
        self.configuration = configuration
        var settings = settings
        settings.port = configuration.port
        let table = S3RouteTable(store: store, configuration: configuration, maxObjectBytes: settings.maxBodyBytes, logger: logger)
        http = HTTPServer(configuration: settings, handler: table, logger: logger, metrics: metrics)
    }

    public func start() throws { try http.start() }

    /// The port the listener is bound to (after `start`).
    public var port: Int { http.port }

    public func shutdown() { http.shutdown() }
}
