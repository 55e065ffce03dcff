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

    /// Opens the chosen store when the server starts.
    var factory: ValueStoreFactory {
        switch (postgres, fixturesDirectory) {
        case (let postgres?, nil):
            return PostgresStore.factory(options: postgres)
        case (let postgres?, let fixtures?):
            return LayeredStore.factory(fixturesDirectory: fixtures, cacheBytes: disk.cacheBytes / 4,
                                        over: PostgresStore.factory(options: postgres))
        case (nil, let fixtures?):
            return LayeredStore.factory(options: disk, fixturesDirectory: fixtures)
        case (nil, nil):
            return DiskStore.factory(options: disk)
        }
    }
}
