import LarderStorage
import LarderSupport

/// The read-only fixture layer every namespace's store sits on: compiled
/// once, by the first store that asks, and shared by all of them (the
/// compiled copy is immutable, so any number of stores may read it).
///
/// `layer` holds `lock` while it compiles, so a second caller waits for the
/// first compilation instead of starting its own.
package final class SharedFixtures: Sendable {
    package let directory: String
    private let cacheDirectory: String
    private let cacheBytes: Int
    private let compiled = Locked<FixtureLayer?>(nil)

    /// Fixtures of `directory`, to be compiled into `cacheDirectory`.
    package init(directory: String, cacheDirectory: String, cacheBytes: Int) {
        self.directory = directory
        self.cacheDirectory = cacheDirectory
        self.cacheBytes = cacheBytes
    }

    /// The compiled fixtures, compiling them on the first call.
    package func layer(logger: Logger) throws -> FixtureLayer {
        try compiled.withLock { (layer: inout FixtureLayer?) throws -> FixtureLayer in
            if let layer { return layer }
            let made = try FixtureLayer(directory: directory, cacheDirectory: cacheDirectory, cacheBytes: cacheBytes, logger: logger)
            layer = made
            return made
        }
    }

    /// Closes the compiled store, once every store over it is closed.
    package func close() {
        compiled.withLock { layer in
            layer?.close()
            layer = nil
        }
    }

    /// The store `open` makes, over these fixtures (compiled if need be,
    /// after the store opened: a disk store's lock says whether the data
    /// directory, where they are compiled, is ours). The layered store does
    /// not close them: `close` here does.
    package func store(logger: Logger, changes: StoreChangeObserver?,
                      open: (StoreChangeObserver) throws -> any ValueStore) throws -> LayeredStore {
        let filter = FixtureChangeFilter(downstream: changes)
        let store = try open(filter)
        let fixtures: FixtureLayer
        do { fixtures = try layer(logger: logger) } catch { store.close(); throw error }
        filter.attach(fixtures)
        return LayeredStore(store: store, sharing: fixtures)
    }
}
