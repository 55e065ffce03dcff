import LarderHTTP
import LarderRouting
import LarderStorage
import LarderSupport

/// The S3 listener: a second `HTTPServer` on its own port whose handler
/// is a route table of the routing core with one route, `S3Router`, over the stores of the server that owns it
/// (`LarderServer.s3`), which says through `S3Namespaces` which store, journal
/// and fault rules each namespace has. Started and stopped with that server.
package final class S3Server: Sendable {
    package let configuration: S3Configuration
    package let http: HTTPServer
    /// Answers by S3 operation and status, for `/metrics`.
    package let requestCounts: S3RequestCounts

    /// `http`: the plain server's settings (host, limits, timeouts); the
    /// listener takes them with its own port. `tokenRequired`: the plain
    /// API requires a bearer token, so no default key is accepted here
    /// (`S3Configuration.acceptedKeys`).
    package init(configuration: S3Configuration, http settings: HTTPServerConfiguration, namespaces: any S3Namespaces,
                tokenRequired: Bool = false, logger: Logger, metrics: HTTPServerMetrics = HTTPServerMetrics(),
                requestCounts: S3RequestCounts = S3RequestCounts()) {
        self.configuration = configuration
        self.requestCounts = requestCounts
        var settings = settings
        settings.port = configuration.port
        let maxObjectBytes = settings.maxBodyBytes
        settings.maxBodyBytes = Self.maxRequestBytes(forObjects: maxObjectBytes)
        // S3 ignores an `Expect` it does not know (s3-tests send `Expect: 200`).
        settings.refusesUnknownExpectations = false
        let router = S3Router(namespaces: namespaces, configuration: configuration,
                                 keys: configuration.acceptedKeys(tokenRequired: tokenRequired), counts: requestCounts,
                                 maxObjectBytes: maxObjectBytes, logger: logger)
        http = HTTPServer(configuration: settings, handler: RouteTable([(.prefix(""), router)], middleware: []), logger: logger,
                          metrics: metrics)
    }

    /// The largest request body the listener reads: an object of the
    /// largest size in its aws-chunked framing. AWS's smallest chunk is
    /// 8 KiB, and its framing (a signed chunk's line) under 100 bytes, so
    /// 1/64 more, and room for the trailers, holds any object the face
    /// takes; the object itself is held to `maxObjectBytes`
    /// (`x-amz-decoded-content-length`, or the bytes as they come).
    static func maxRequestBytes(forObjects maxObjectBytes: Int64) -> Int64 {
        let (framed, overflow) = maxObjectBytes.addingReportingOverflow(maxObjectBytes / 64 + (64 << 10))
        return overflow ? .max : framed
    }

    package func start() throws { try http.start() }

    /// The port the listener is bound to (after `start`).
    package var port: Int { http.port }

    package func shutdown() { http.shutdown() }
}
