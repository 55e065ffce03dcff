import LarderRouting
import LarderStorage

/// What the Larder API face is told by the server that serves it (the
/// server's `LarderConfiguration` less the listener, the store and the
/// other faces): its middleware, namespaces, journal, change feed and
/// limits.
public struct APISettings: Sendable {
    /// The largest value the store routes take (`--max-value-size`).
    public var maxBodyBytes: Int64
    /// `--public-dir`; nil: the viewer built into the binary.
    public var publicDirectory: String?
    public var eventHistory: Int
    public var eventHeartbeat: Double
    public var eventBufferBytes: Int
    public var allowFaults: Bool
    public var token: String?
    public var corsOrigins: [String]
    public var namespaceStores: (any NamespaceStores)?
    public var maxNamespaces: Int
    public var namespaceIdleSeconds: Double
    public var journal: Int
    /// Run around every route after Larder's own, outermost first.
    public var middleware: [any LarderMiddleware]

    public init(maxBodyBytes: Int64, publicDirectory: String?, eventHistory: Int, eventHeartbeat: Double, eventBufferBytes: Int,
                allowFaults: Bool, token: String?, corsOrigins: [String], namespaceStores: (any NamespaceStores)?,
                maxNamespaces: Int, namespaceIdleSeconds: Double, journal: Int, middleware: [any LarderMiddleware]) {
        self.maxBodyBytes = maxBodyBytes
        self.publicDirectory = publicDirectory
        self.eventHistory = eventHistory
        self.eventHeartbeat = eventHeartbeat
        self.eventBufferBytes = eventBufferBytes
        self.allowFaults = allowFaults
        self.token = token
        self.corsOrigins = corsOrigins
        self.namespaceStores = namespaceStores
        self.maxNamespaces = maxNamespaces
        self.namespaceIdleSeconds = namespaceIdleSeconds
        self.journal = journal
        self.middleware = middleware
    }
}
