import LarderPostgres
import LarderSupport

/// The one `PostgresConnections` of a server, made when the default store
/// opens (with the server's logger, which the flags' parsing comes before)
/// and then shared by every namespace's store and the namespace registry.
final class PostgresConnectionsOnce: Sendable {
    private let options: PostgresStoreOptions
    private let made = Locked<PostgresConnections?>(nil)

    init(options: PostgresStoreOptions) { self.options = options }

    /// The connections, made on the first call (with `logger`).
    func get(logger: Logger) -> PostgresConnections {
        made.withLock { made in
            if let made { return made }
            let connections = PostgresConnections(options: options, logger: logger)
            made = connections
            return connections
        }
    }

    /// The connections if they were made.
    var ifMade: PostgresConnections? { made.withLock { $0 } }
}
