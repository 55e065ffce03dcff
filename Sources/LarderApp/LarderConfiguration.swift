import LarderHTTP
import LarderLog
import LarderStore

/// Everything `larder serve` can be told, in one value.
public struct LarderConfiguration: Sendable {
    public var http = HTTPServerConfiguration()
    public var store: DiskStoreOptions
    public var logLevel: LogLevel = .info
    /// Where the browser viewer's files are (`Public/`); nil: not served.
    public var publicDirectory: String?

    public init(dataDirectory: String = "./larder-data") {
        store = DiskStoreOptions(dataDirectory: dataDirectory)
    }
}
