#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LarderDiskStore
import LarderFixtures
import LarderPostgres
import LarderStorage
import LarderSupport

/// The store `larder serve` runs on, as its flags chose it: the disk store
/// in a data directory, or PostgreSQL (`--store postgres://…`), either one
/// under the read-only fixtures of `--fixtures`, and the stores of its
/// namespaces on the same backend. This is the one place that knows the
/// backends; the server (`LarderApp`) only sees `ValueStore` and
/// `NamespaceStores`.
package struct StoreChoice {
    /// The disk store's options; its data directory is also where a disk
    /// store compiles its fixtures.
    package var disk: DiskStoreOptions
    /// Set: the PostgreSQL store in place of the disk store.
    package var postgres: PostgresStoreOptions?
    /// A read-only directory of fixtures under the store; nil: none.
    package var fixturesDirectory: String?

    package init(disk: DiskStoreOptions, postgres: PostgresStoreOptions? = nil, fixturesDirectory: String? = nil) {
        self.disk = disk
        self.postgres = postgres
        self.fixturesDirectory = fixturesDirectory
    }

    /// How the store is named in the server's start-up line.
    package var description: String {
        if let postgres { return postgres.redactedURL + " (schema \(postgres.schema))" }
        return disk.dataDirectory
    }

    /// Opens the chosen store when the server starts, and the stores of its
    /// namespaces. The fixtures are compiled once and shared by the default
    /// store and every namespace's: on the disk store into
    /// `<data>/fixture-cache`; on PostgreSQL, which has no data directory
    /// of ours, into a temporary directory. On PostgreSQL the default store
    /// and the namespaces' share one pool of connections and one listener.
    package func stores() -> (factory: ValueStoreFactory, namespaces: any NamespaceStores) {
        let disk = self.disk
        if let postgres {
            let connections = PostgresConnectionsOnce(options: postgres)
            let fixtures = fixturesDirectory.map {
                SharedFixtures(directory: $0,
                               cacheDirectory: TemporaryDirectory.path + "larder-fixtures-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                               cacheBytes: disk.cacheBytes / 4)
            }
            let factory: ValueStoreFactory = { changes, logger in
                let open = { (changes: StoreChangeObserver?) throws -> any ValueStore in
                    try PostgresStore(options: postgres, schema: postgres.schema, connections: connections.get(logger: logger),
                                      logger: logger, changes: changes)
                }
                guard let fixtures else { return try open(changes) }
                return try fixtures.store(logger: logger, changes: changes) { filter in try open(filter) }
            }
            return (factory, PostgresNamespaceStores(options: postgres, connections: connections, fixtures: fixtures))
        }
        guard let fixturesDirectory else {
            return (DiskStore.factory(options: disk), DiskNamespaceStores(options: disk, fixtures: nil))
        }
        let shared = SharedFixtures(directory: fixturesDirectory, cacheDirectory: disk.dataDirectory + "/fixture-cache",
                                    cacheBytes: disk.cacheBytes / 4)
        let factory: ValueStoreFactory = { changes, logger in
            try shared.store(logger: logger, changes: changes) { filter in
                try DiskStore(options: disk, logger: logger, changes: filter)
            }
        }
        return (factory, DiskNamespaceStores(options: disk, fixtures: shared))
    }
}
