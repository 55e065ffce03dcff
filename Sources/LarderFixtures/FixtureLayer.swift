import LarderDiskStore
import LarderStorage
import LarderValueFile
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// The read-only fixtures under the store (`--fixtures DIR`): every file in
/// `DIR` is the value of the key named by its relative path, its content
/// type taken from its extension.
///
/// At start-up the files are compiled into a private `DiskStore` (gzip
/// files, as the store keeps them) so that fixture values are served by the
/// same code as stored ones: gzip negotiation, ranges, the cache. `DIR` is
/// only ever read; the compiled copy is rebuilt on every start. Everything
/// here is immutable after `init`, so any thread may read it.
package final class FixtureLayer: Sendable {
    /// The fixture directory, as given.
    package let directory: String
    let disk: DiskStore
    /// Metadata of every fixture, by key.
    private let index: [String: ValueMetadata]
    /// Every fixture key in byte order.
    let keys: [StoreKey]

    /// Compiles `directory` into `cacheDirectory` (wiped first).
    package init(directory: String, cacheDirectory: String, cacheBytes: Int, logger: Logger) throws {
        self.directory = directory
        guard let st = try POSIX.statIfExists(directory), POSIX.isDirectory(st) else {
            throw StoreError.invalidFixtures("\(directory) is not a directory")
        }
        var options = DiskStoreOptions(dataDirectory: cacheDirectory, fsync: false)
        options.cacheBytes = cacheBytes
        // Fixture ETags carry the top bit: never equal to a store ETag.
        options.versionTag = 1 << 63
        let disk = try DiskStore(options: options, logger: logger)
        self.disk = disk
        do { _ = try disk.deleteValues(under: .root) } catch { disk.close(); throw error }

        let started = Clock.nowNanos()
        var index: [String: ValueMetadata] = [:]
        var keys: [StoreKey] = []
        var skipped = 0
        do {
            var walker = try FixtureTreeWalker(directory: directory)
            defer {
                for link in walker.linksNotFollowed {
                    logger.warning("fixtures: not following \(link): it leads out of \(directory) (or nowhere)")
                }
            }
            try walker.walk { path, relative in
                let key: StoreKey
                do {
                    key = try StoreKey(bytes: relative)
                } catch {
                    skipped += 1
                    logger.warning("fixtures: skipping \(path): its path is not a valid key (\(error))")
                    return
                }
                index[key.string] = try Self.compile(path, as: key, into: disk).metadata
                keys.append(key)
            }
        } catch {
            disk.close()
            throw error
        }
        self.index = index
        self.keys = keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        let ms = Double(Clock.nowNanos() - started) / 1e6
        logger.notice("fixtures: \(index.count) values from \(directory) in \(Int(ms.rounded())) ms\(skipped > 0 ? ", \(skipped) files skipped" : "")")
    }

    /// How many fixtures there are.
    package var count: Int { index.count }

    /// The fixture's metadata, or nil when `key` has none.
    package func metadata(_ key: String) -> ValueMetadata? { index[key] }

    /// Fixtures whose keys start with `prefix` (all for "").
    package func count(under prefix: String) -> Int {
        let p = Array(prefix.utf8)
        var n = 0
        for i in firstIndex(notBelow: p)..<keys.count {
            guard keys[i].bytes.starts(with: p) else { break }
            n += 1
        }
        return n
    }

    /// Whether any fixture key starts with `prefix` (a listing asks this on
    /// every page: a binary search, no count).
    func hasAny(under prefix: String) -> Bool {
        let p = Array(prefix.utf8)
        let i = firstIndex(notBelow: p)
        return i < keys.count && keys[i].bytes.starts(with: p)
    }

    /// The index of the first key not below `bytes` in byte order.
    private func firstIndex(notBelow bytes: [UInt8]) -> Int {
        var low = 0, high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid].bytes.lexicographicallyPrecedes(bytes) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    func open(_ key: StoreKey) throws -> StoredValue {
        let value = try disk.openValue(key)
        value.source = .fixture
        return value
    }

    func close() { disk.close() }

    /// Stores one fixture file in the compiled store, streaming it.
    private static func compile(_ path: String, as key: StoreKey, into disk: DiskStore) throws -> PutOutcome {
        let fd = try POSIX.open(path, O_RDONLY)
        defer { Glibc.close(fd) }
        let writer = try disk.beginUpload(key: key, contentType: MediaType.forFileName(path), encoding: .identity)
        // Its size is known: a large fixture is deflated in segments, on every core.
        try writer.expect(bytes: Int64(try POSIX.fileSize(fd, path: path)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        do {
            var offset = 0
            while true {
                let n = try POSIX.pread(fd, buffer, at: offset, path: path)
                if n == 0 { break }
                try writer.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                offset += n
            }
        } catch {
            writer.abort()
            throw error
        }
        // `finish` takes the writer over, failing or not.
        return try writer.finish().get()
    }
}
