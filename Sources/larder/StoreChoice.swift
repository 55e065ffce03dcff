import LarderDiskStore
import LarderFixtures
import LarderPostgres
import LarderStorage

/// The store `larder serve` runs on, as its flags chose it: the disk store
/// in a data directory, or PostgreSQL (`--store postgres://…`), either one
/// under the read-only fixtures of `--fixtures`. This is the one place that
/// knows the backends; the server (`LarderApp`) only sees `ValueStore`.
struct StoreChoice {
    /// The disk store's options; its data directory is also where a disk
    /// store compiles its fixtures.
    var disk: DiskStoreOptions
    /// Set: the PostgreSQL store in place of the disk store.
    var postgres: PostgresStoreOptions?
    /// A read-only directory of fixtures under the store; nil: none.
    var fixturesDirectory: String?

    /// How the store is named in the server's start-up line.
    var description: String {
        if let postgres { return postgres.redactedURL + " (schema \(postgres.schema))" }
        return disk.dataDirectory
    }

    /// Opens the chosen store when the server starts, and the stores of its
    /// namespaces (nil: PostgreSQL has none yet). On the disk store the
    /// fixtures are compiled once, into `<data>/fixture-cache`, and shared
    /// by the default store and every namespace's.
    func stores() -> (factory: ValueStoreFactory, namespaces: (any NamespaceStores)?) {
        switch (postgres, fixturesDirectory) {
        case (let postgres?, nil):
            return (PostgresStore.factory(options: postgres), nil)
        case (let postgres?, let fixtures?):
            return (LayeredStore.factory(fixturesDirectory: fixtures, cacheBytes: disk.cacheBytes / 4,
                                         over: PostgresStore.factory(options: postgres)), nil)
        case (nil, let fixtures?):
            let shared = SharedFixtures(directory: fixtures, cacheDirectory: disk.dataDirectory + "/fixture-cache",
                                        cacheBytes: disk.cacheBytes / 4)
            let disk = self.disk
            let factory: ValueStoreFactory = { changes, logger in
                try shared.store(logger: logger, changes: changes) { filter in
                    try DiskStore(options: disk, logger: logger, changes: filter)
                }
            }
            return (factory, DiskNamespaceStores(options: disk, fixtures: shared))
        case (nil, nil):
            return (DiskStore.factory(options: disk), DiskNamespaceStores(options: disk, fixtures: nil))
        }
    }
}
