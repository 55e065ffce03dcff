import LarderSupport
import LarderStoreVocabulary
/// Recently read small values in memory, so a hot GET costs no open, read
/// or inflate. Coherent with writes: every publish or delete of a key
/// bumps its stripe's epoch and drops the entry under one lock, and a
/// reader only inserts what it read if the epoch it saw when it opened the
/// file is still current, so a value replaced in between is never cached.
///
/// Eviction is two generations (an approximation of LRU): hits in the old
/// generation move to the young one; when the young one holds half the
/// capacity it becomes the old one and the previous old one is dropped.
package final class ValueCache: @unchecked Sendable {
    /// A class: a hit hands out one reference, not a copy of six fields
    /// (a retain each).
    package final class Entry: Sendable {
        package let metadata: ValueMetadata
        /// The whole gzip file.
        package let file: [UInt8]
        package let headerLength: Int
        /// The value, decompressed.
        package let identity: [UInt8]
        /// Formatted once, sent with every hit.
        package let etag: String
        package let gzipETag: String
        /// What readers derived from this entry (`CachedValueMemo`).
        package let memo = CachedValueMemo()
        package var cost: Int { file.count + identity.count + metadata.key.utf8.count + metadata.contentType.utf8.count + 128 }

        package init(metadata: ValueMetadata, file: [UInt8], headerLength: Int, identity: [UInt8], etag: String, gzipETag: String) {
            self.metadata = metadata
            self.file = file
            self.headerLength = headerLength
            self.identity = identity
            self.etag = etag
            self.gzipETag = gzipETag
        }
    }

    /// Files up to this size are cached.
    static let maxFileSize = 64 * 1024
    static let maxValueSize = 512 * 1024

    let capacity: Int
    // Everything below is guarded by `lock` (so the runtime's exclusivity
    // checks, one per access on every GET, are off for them).
    private let lock = Lock()
    // Keyed by bytes: Swift's String equality would merge NFC and NFD
    // spellings, which are two different keys.
    @exclusivity(unchecked) private var young: [ByteKey: Entry] = [:]
    @exclusivity(unchecked) private var old: [ByteKey: Entry] = [:]
    @exclusivity(unchecked) private var youngCost = 0
    @exclusivity(unchecked) private var epochs: [UInt64]

    package init(capacity: Int, stripes: Int) {
        self.capacity = capacity
        self.epochs = [UInt64](repeating: 0, count: stripes)
    }

    package var isEnabled: Bool { capacity > 0 }

    package func lookup(_ key: [UInt8]) -> Entry? {
        guard isEnabled else { return nil }
        return lock.withLock {
            if let hit = young[ByteKey(key)] { return hit }
            guard let hit = old.removeValue(forKey: ByteKey(key)) else { return nil }
            admitLocked(key, hit)
            return hit
        }
    }

    /// The stripe's epoch, bumped by every write or delete in the stripe
    /// (under its write lock). A reader reads it while holding the stripe's
    /// read lock; a writer before and under its write lock, to learn whether
    /// what it read unlocked may have changed.
    package func epoch(stripe: Int) -> UInt64 {
        lock.withLock { epochs[stripe] }
    }

    /// Caches what a reader read, unless the key was written since `epoch`.
    package func insert(_ key: [UInt8], _ entry: Entry, stripe: Int, epoch: UInt64) {
        guard isEnabled, entry.cost <= capacity / 8 else { return }
        lock.withLock {
            guard epochs[stripe] == epoch else { return }
            if let previous = young.removeValue(forKey: ByteKey(key)) { youngCost -= previous.cost }
            old.removeValue(forKey: ByteKey(key))
            admitLocked(key, entry)
        }
    }

    private func admitLocked(_ key: [UInt8], _ entry: Entry) {
        young[ByteKey(key)] = entry
        youngCost += entry.cost
        if youngCost > capacity / 2 {
            old = young
            young = [:]
            youngCost = 0
        }
    }

    /// A write or delete of `key` (called under the stripe's write lock).
    package func invalidate(_ key: [UInt8], stripe: Int) {
        lock.withLock {
            epochs[stripe] &+= 1
            if let previous = young.removeValue(forKey: ByteKey(key)) { youngCost -= previous.cost }
            old.removeValue(forKey: ByteKey(key))
        }
    }

    /// A reset or prefix delete: everything goes.
    package func invalidateAll() {
        lock.withLock {
            for i in epochs.indices { epochs[i] &+= 1 }
            young = [:]
            old = [:]
            youngCost = 0
        }
    }
}
