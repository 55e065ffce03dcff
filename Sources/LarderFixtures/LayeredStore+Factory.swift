import FoundationEssentials
import LarderDiskStore
import LarderStorage
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

extension LayeredStore {
    /// The disk store in `options.dataDirectory` over the fixtures of
    /// `fixturesDirectory`, compiled into `<data>/fixture-cache`.
    package static func factory(options: DiskStoreOptions, fixturesDirectory: String) -> ValueStoreFactory {
        { changes, logger in
            try LayeredStore(options: options, fixturesDirectory: fixturesDirectory, logger: logger, changes: changes)
        }
    }

    /// The store `open` makes over the fixtures of `fixturesDirectory`,
    /// compiled into a temporary directory of this process: no data
    /// directory is ours to lock (the store may live in a database).
    package static func factory(fixturesDirectory: String, cacheBytes: Int,
                               over open: @escaping ValueStoreFactory) -> ValueStoreFactory {
        { changes, logger in
            let cache = TemporaryDirectory.path + "larder-fixtures-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            return try LayeredStore(fixturesDirectory: fixturesDirectory, cacheDirectory: cache, cacheBytes: cacheBytes,
                                    logger: logger, changes: changes) { filter in try open(filter, logger) }
        }
    }
}
