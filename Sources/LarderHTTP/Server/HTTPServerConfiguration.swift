import LarderModel

/// Every limit and timeout of the HTTP server in one place. Each has a CLI
/// flag in `larder serve`, whose help shows `defaults`.
public struct HTTPServerConfiguration: Sendable {
    /// Every setting at its default, for the flags' help.
    public static let defaults = HTTPServerConfiguration()

    public var host: String = "127.0.0.1"
    /// 0 picks a free port; `HTTPServer.port` tells which.
    public var port: Int = 8080
    /// Longest request line (method, target, version); longer gets 414.
    public var maxRequestLineBytes: Int = 8 * 1024
    /// Largest header section after the request line; larger gets 431.
    public var maxHeaderBytes: Int = 32 * 1024
    /// Largest request body; larger gets 413.
    public var maxBodyBytes: Int64 = ServerDefaults.maxValueSize
    /// Seconds a client may take to send a whole request head (408).
    public var headerTimeout: Double = 10
    /// Seconds a keep-alive connection may sit idle, or a body or a slow
    /// reader may stall, before the connection is closed.
    public var idleTimeout: Double = 60
    /// Open connections at most; more are answered 503 and closed.
    public var maxConnections: Int = 4096
    /// listen(2) backlog.
    public var backlog: Int32 = 1024
    /// Seconds a graceful shutdown waits for in-flight requests.
    public var shutdownGrace: Double = 10
    /// An `Expect` other than `100-continue`: `417` (RFC 9110 10.1.1 allows
    /// it, and the plain API says so), or ignored as S3 ignores it.
    public var refusesUnknownExpectations = true

    public init() {}
}
