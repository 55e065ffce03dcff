import LarderRouting
import LarderStorage

/// What the Larder API face is told by the server that serves it (the
/// server's `LarderConfiguration` less the listener, the store and the
/// other faces): its middleware, namespaces, journal, change feed and
/// limits.
package struct APISettings: Sendable {
    /// The largest value the store routes take (`--max-value-size`).
    package var maxBodyBytes: Int64
    /// `--public-dir`; nil: the viewer built into the binary.
    package var publicDirectory: String?
    package var eventHistory: Int
    package var eventHeartbeat: Double
    package var eventBufferBytes: Int
    package var allowFaults: Bool
    package var token: String?
    package var corsOrigins: [String]
    package var namespaceStores: (any NamespaceStores)?
    package var maxNamespaces: Int
    package var namespaceIdleSeconds: Double
    package var journal: Int
    /// Run around every route after Larder's own, outermost first.
    package var middleware: [any LarderMiddleware]

    package init(maxBodyBytes: Int64, publicDirectory: String?, eventHistory: Int, eventHeartbeat: Double, eventBufferBytes: Int,
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
