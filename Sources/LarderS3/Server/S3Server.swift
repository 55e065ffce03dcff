import LarderHTTP
import LarderStorage
import LarderSupport

/// The S3 listener: a second `HTTPServer` on its own port whose handler
/// is the S3 route table, over the stores of the server that owns it
/// (`LarderServer.s3`), which says through `S3Namespaces` which store, journal
/// and fault rules each namespace has. Started and stopped with that server.
public final class S3Server: Sendable {
    public let configuration: S3Configuration
    public let http: HTTPServer
    /// Answers by S3 operation and status, for `/metrics`.
    public let requestCounts: S3RequestCounts

    /// `http`: the plain server's settings (host, limits, timeouts); the
    /// listener takes them with its own port.
    public init(configuration: S3Configuration, http settings: HTTPServerConfiguration, namespaces: any S3Namespaces,
                logger: Logger, metrics: HTTPServerMetrics = HTTPServerMetrics(), requestCounts: S3RequestCounts = S3RequestCounts()) {
        self.configuration = configuration
        self.requestCounts = requestCounts
        var settings = settings
        settings.port = configuration.port
        let table = S3RouteTable(namespaces: namespaces, configuration: configuration, counts: requestCounts,
                                 maxObjectBytes: settings.maxBodyBytes, logger: logger)
        http = HTTPServer(configuration: settings, handler: table, logger: logger, metrics: metrics)
    }

    public func start() throws { try http.start() }

    /// The port the listener is bound to (after `start`).
    public var port: Int { http.port }

    public func shutdown() { http.shutdown() }
}
