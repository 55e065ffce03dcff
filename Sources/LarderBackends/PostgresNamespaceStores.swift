import Dispatch
import LarderFixtures
import LarderPostgres
import LarderStorage
import LarderSupport

/// Namespaces on PostgreSQL: namespace `w1` is a `PostgresStore` in a
/// schema of its own (`PostgresNamespaceRegistry` says which), on the
/// connections the default store uses, over the fixtures it shares. The
/// servers of one database share the namespaces: `w1` through any of them
/// is the same values and the same change feed.
///
/// A drop forgets the name at once (a round trip: the next request for
/// the name gets a new, empty schema) and removes the old schema in the
/// background.
final class PostgresNamespaceStores: NamespaceStores {
    private let options: PostgresStoreOptions
    private let shared: PostgresConnectionsOnce
    private let fixtures: SharedFixtures?
    /// Made with the connections, on first use (after the default store opened).
    private let made = Locked<(connections: PostgresConnections, registry: PostgresNamespaceRegistry)?>(nil)
    /// The schema of each namespace open here, by name: a schema another
    /// server forgets names the namespace to close.
    private let opened = Locked<[String: String]>([:])
    private let droppedElsewhere = Locked<(@Sendable (String) -> Void)?>(nil)
    /// Removes dropped namespaces' schemas, one after another.
    private let reaper = DispatchQueue(label: "larder.namespaces.postgres-reaper", qos: .utility)

    /// The namespaces of the store `options` names, on the connections of
    /// `shared`, over `fixtures` (nil: none).
    init(options: PostgresStoreOptions, connections shared: PostgresConnectionsOnce, fixtures: SharedFixtures?) {
        self.options = options
        self.shared = shared
        self.fixtures = fixtures
    }

    private var connections: PostgresConnections { setUp().connections }
    private var registry: PostgresNamespaceRegistry { setUp().registry }

    private func setUp() -> (connections: PostgresConnections, registry: PostgresNamespaceRegistry) {
        made.withLock { made in
            if let made { return made }
            let connections = shared.get(logger: Logger(label: "larder.postgres"))
            // The registry uses them until `close`, whatever else has closed.
            connections.retain()
            let registry = PostgresNamespaceRegistry(connections: connections, baseSchema: options.schema)
            // Told on the PostgreSQL event loop: closing the namespace takes
            // the app's locks, whose holders may be waiting on the loop
            // (opening a namespace), so it happens on the reaper's queue.
            let (opened, droppedElsewhere) = (self.opened, self.droppedElsewhere)
            registry.watch { [reaper] schema in
                reaper.async { Self.forgotten(schema, opened: opened, droppedElsewhere: droppedElsewhere) }
            }
            made = (connections, registry)
            return made!
        }
    }

    func existing() throws -> [String] { try registry.names() }

    func open(_ name: String, changes: StoreChangeObserver, logger: Logger) throws -> any ValueStore {
        let schema = try registry.schema(for: name)
        let options = self.options, connections = self.connections
        let store: any ValueStore
        if let fixtures {
            store = try fixtures.store(logger: logger, changes: changes) { filter in
                try PostgresStore(options: options, schema: schema, connections: connections, logger: logger, changes: filter)
            }
        } else {
            store = try PostgresStore(options: options, schema: schema, connections: connections, logger: logger, changes: changes)
        }
        opened.withLock { $0[name] = schema }
        return store
    }

    func whenDroppedElsewhere(_ handler: @escaping @Sendable (String) -> Void) {
        droppedElsewhere.withLock { $0 = handler }
    }

    /// A server forgot the namespace in `schema`: if it is open here, it is
    /// closed (this server's own drops took theirs out of `opened` first).
    private static func forgotten(_ schema: String, opened: Locked<[String: String]>,
                                  droppedElsewhere: Locked<(@Sendable (String) -> Void)?>) {
        let name = opened.withLock { opened -> String? in
            guard let name = opened.first(where: { $0.value == schema })?.key else { return nil }
            opened[name] = nil
            return name
        }
        guard let name, let handler = droppedElsewhere.withLock({ $0 }) else { return }
        handler(name)
    }

    func drop(_ name: String, store: any ValueStore, logger: Logger) {
        guard let schema = Self.schema(of: store) else { return store.close() }
        opened.withLock { if $0[name] == schema { $0[name] = nil } }
        do {
            try registry.forget(name, schema: schema)
        } catch {
            logger.warning("namespace \(name): cannot take it out of the registry: \(error)")
        }
        let registry = self.registry
        reaper.async {
            store.close()
            do { try registry.remove(schema: schema) } catch {
                logger.warning("namespace \(name): cannot drop schema \(schema): \(error)")
            }
        }
    }

    /// The schema of a store this made (under the fixtures or not).
    private static func schema(of store: any ValueStore) -> String? {
        ((store as? LayeredStore)?.store as? PostgresStore ?? store as? PostgresStore)?.schema
    }

    func close() {
        reaper.sync {}
        fixtures?.close()
        made.withLock { made in
            made?.registry.stopWatching()
            made?.connections.release()
        }
    }
}
