import LarderHTTP
import LarderSupport
import LarderStore

/// Everything `larder serve` can be told, in one value.
public struct LarderConfiguration: Sendable {
    public var http = HTTPServerConfiguration()
    public var store: DiskStoreOptions
    public var logLevel: LogLevel = .info
    /// Where the browser viewer's files are (`Public/`); nil: not served.
    public var publicDirectory: String?
    /// A read-only directory of fixtures under the store (`--fixtures`); nil: none.
    public var fixturesDirectory: String?
    /// Recent changes kept for `Last-Event-ID` replay on `/events`.
    public var eventHistory: Int = 10_000
    /// Seconds between keep-alive comments on event streams.
    public var eventHeartbeat: Double = 15
    /// Bytes an event stream may fall behind before its reader is dropped.
    public var eventBufferBytes: Int = 4 << 20
    /// Serve `/faults` and put the fault middleware on the chain
    /// (`--allow-faults`). Off: neither exists, and `/faults` is a 404.
    public var allowFaults = false
    /// Middleware run around every route, outermost first, after Larder's own.
    public var middleware: [any LarderMiddleware] = []

    public init(dataDirectory: String = "./larder-data") {
        store = DiskStoreOptions(dataDirectory: dataDirectory)
    }
}
