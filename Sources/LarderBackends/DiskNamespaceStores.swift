import Dispatch
import FoundationEssentials
import LarderDiskStore
import LarderFixtures
import LarderStorage
import LarderSupport
import LarderValueFile
#if canImport(Glibc)
import Glibc
#endif

/// Namespaces on the disk store: namespace `w3` is a `DiskStore` of its own
/// in `<data>/ns/w3/s-<random>/` (reopened after a restart), over the
/// fixtures the default store shares. A drop renames `<data>/ns/w3` into
/// `<data>/ns-trash/` (constant time) and closes the store and deletes its
/// files in the background; trash left by a crash is deleted at the next
/// start. The random part makes each incarnation of a name a directory of
/// its own: background work the dropped store still had queued (a reset's
/// delete of an old generation, by path) can never touch the next store
/// made under the same name.
///
/// Each namespace's store gets a share of the default one's resources: a
/// sixteenth of its value cache and eight lock stripes, so a thousand
/// namespaces cost what a few default stores would.
package final class DiskNamespaceStores: NamespaceStores {
    private let options: DiskStoreOptions
    private let fixtures: SharedFixtures?
    private let root: String
    private let trash: String
    /// Deletes dropped namespaces' files, one tree after another.
    private let reaper = DispatchQueue(label: "larder.namespaces.reaper", qos: .utility)

    /// Namespaces under `options.dataDirectory`, over `fixtures` (nil: none).
    package init(options: DiskStoreOptions, fixtures: SharedFixtures?) {
        var each = options
        each.cacheBytes = options.cacheBytes / 16
        each.stripes = min(options.stripes, 8)
        self.options = each
        self.fixtures = fixtures
        root = options.dataDirectory + "/ns"
        trash = options.dataDirectory + "/ns-trash"
    }

    package func existing() throws -> [String] {
        if let left = try? FileManager.default.contentsOfDirectory(atPath: trash), !left.isEmpty {
            let trash = self.trash
            reaper.async { for name in left { POSIX.removeTree(trash + "/" + name) } }
        }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        return names.filter { name in
            (try? POSIX.statIfExists(root + "/" + name)).flatMap { $0.map(POSIX.isDirectory) } ?? false
        }.sorted()
    }

    package func open(_ name: String, changes: StoreChangeObserver, logger: Logger) throws -> any ValueStore {
        var options = self.options
        let directory = root + "/" + name
        let kept = (try? FileManager.default.contentsOfDirectory(atPath: directory))?.filter { $0.hasPrefix("s-") }.sorted()
        options.dataDirectory = directory + "/" + (kept?.last ?? "s-" + String(UInt64.random(in: 0...UInt64.max), radix: 16))
        guard let fixtures else { return try DiskStore(options: options, logger: logger, changes: changes) }
        return try fixtures.store(logger: logger, changes: changes) { filter in
            try DiskStore(options: options, logger: logger, changes: filter)
        }
    }

    package func drop(_ name: String, store: any ValueStore, logger: Logger) {
        let directory = root + "/" + name
        let gone = trash + "/" + name + "-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        mkdir(trash, 0o755)
        let moved = rename(directory, gone) == 0
        if !moved, errno != ENOENT {
            logger.warning("namespace \(name): cannot move \(directory) to the trash (errno \(errno))")
        }
        reaper.async {
            store.close()
            if moved { POSIX.removeTree(gone) }
        }
    }

    package func close() {
        fixtures?.close()
        reaper.sync {}
    }
}
