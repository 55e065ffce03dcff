import LarderApp
import LarderHTTP
import LarderModel
import LarderRouting
import LarderS3
import LarderSupport
import LarderStorage

/// Everything `larder serve` can be told, in one value.
package struct LarderConfiguration: Sendable {
    package var http = HTTPServerConfiguration()
    /// Opens the store the routes read and write, given the observer its
    /// changes go to. The server opens it once, in `LarderServer.init`;
    /// which store it is (the disk store, PostgreSQL, either over fixtures)
    /// is the caller's choice: the `larder` executable makes it from its
    /// flags, a test or an app that embeds the server makes its own.
    /// The store should refuse values larger than `http.maxBodyBytes`.
    package var openStore: ValueStoreFactory
    /// How the store is named in logs (the disk store: its directory).
    package var storeDescription: String
    package var logLevel: Logger.Level = LarderConfiguration.defaultLogLevel
    /// A directory to serve the browser viewer from (`--public-dir`, for
    /// working on it); nil: the copy of `Public/` built into the binary.
    package var publicDirectory: String?
    /// Recent changes kept for `Last-Event-ID` replay on `/events`.
    package var eventHistory: Int = ServerDefaults.changeHistory
    /// Seconds between keep-alive comments on event streams.
    package var eventHeartbeat: Double = 15
    /// Bytes an event stream may fall behind before its reader is dropped.
    package var eventBufferBytes: Int = LarderConfiguration.defaultEventBufferBytes
    /// Serve `/faults` and put the fault middleware on the chain
    /// (`--allow-faults`). Off: neither exists, and `/faults` is a 404.
    package var allowFaults = false
    /// `--token`: the bearer token every request needs (but `/healthz` and
    /// the viewer's files); nil: no token.
    package var token: String?
    /// `--cors-origin`: origins (`scheme://host[:port]`, `null`) or `*`
    /// whose pages may call the server; empty: CORS off.
    package var corsOrigins: [String] = []
    /// The stores of named namespaces (`/ns/<name>/`), from the same
    /// backend as `openStore`; nil: the server has no namespaces, and every
    /// `/ns/` path answers 501 `namespaces_unsupported`.
    package var namespaceStores: (any NamespaceStores)?
    /// `--max-namespaces`: named namespaces at most (507 `namespace_limit` above).
    package var maxNamespaces: Int = LarderConfiguration.defaultMaxNamespaces
    /// `--namespace-idle`: seconds without a request after which a named
    /// namespace is dropped; 0: never.
    package var namespaceIdleSeconds: Double = LarderConfiguration.defaultNamespaceIdleSeconds
    /// `--journal`: answered requests each namespace's journal keeps
    /// (`/journal`); 0: no journal.
    package var journal: Int = LarderConfiguration.defaultJournal
    /// `--s3-port`, `--s3-credentials`: the S3-compatible listener over the
    /// default namespace's store; nil: no S3 face.
    package var s3: S3Configuration?
    /// Middleware run around every route, outermost first, after Larder's own.
    package var middleware: [any LarderMiddleware] = []
    package init(storeDescription: String, openStore: @escaping ValueStoreFactory) {
        self.storeDescription = storeDescription
        self.openStore = openStore
    }

    /// `info`: one line per request (`--log-level`).
    package static let defaultLogLevel: Logger.Level = .info
    /// `--max-namespaces`.
    package static let defaultMaxNamespaces = 1024
    /// `--namespace-idle`: never.
    package static let defaultNamespaceIdleSeconds: Double = 0
    /// `--journal`: the last 1000 requests.
    package static let defaultJournal = 1000
    /// 4 MiB (`--event-buffer-kb`).
    package static let defaultEventBufferBytes = 4 << 20

    /// What the Larder API face is told.
    var api: APISettings {
        APISettings(maxBodyBytes: http.maxBodyBytes, publicDirectory: publicDirectory, eventHistory: eventHistory,
                    eventHeartbeat: eventHeartbeat, eventBufferBytes: eventBufferBytes, allowFaults: allowFaults, token: token,
                    corsOrigins: corsOrigins, namespaceStores: namespaceStores, maxNamespaces: maxNamespaces,
                    namespaceIdleSeconds: namespaceIdleSeconds, journal: journal, middleware: middleware)
    }
}
