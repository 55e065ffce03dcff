import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// Keys with an expiry time, earliest first, for the sweep that removes
/// their files. Reads never depend on it (every read checks the expiry in
/// the value's own metadata); it only decides when to look.
///
/// A min-heap with lazy deletion: a rewrite pushes a new entry and the
/// dictionary remembers the latest time per key, so stale entries are
/// skipped when they surface, and the heap is rebuilt when they pile up.
final class ExpiryIndex: @unchecked Sendable {
    // Everything below is guarded by `lock`.
    private let lock = Lock()
    private var heap = MinHeap<Int64, StoreKey>()
    /// The expiry of each key's latest known write, and that write's version.
    private var latest: [StoreKey: (expires: Int64, version: UInt64)] = [:]

    var count: Int { lock.withLock { latest.count } }

    /// Records that the write `version` of `key` expires at `expires`,
    /// unless a newer write's expiry is known. When that is now the earliest
    /// time, `schedule` is called with it, under the index's lock.
    func add(_ key: StoreKey, expires: Int64, version: UInt64, schedule: (Int64) -> Void) {
        lock.withLock {
            if let known = latest[key], known.version > version { return }
            latest[key] = (expires, version)
            heap.push(expires, key)
            if heap.count > 2 * latest.count + 1024 { rebuild() }
            if heap.first?.priority == expires { schedule(expires) }
        }
    }

    /// Returns the keys due at `now`, with the version that expired;
    /// `schedule` gets the next due time, if any, under the index's lock.
    /// A due key stays known as expired (`hasExpired`) until the sweep has
    /// removed its file and calls `settle`: a PUT between the two must still
    /// see the value as absent, and answer 201.
    func takeDue(now: Int64, schedule: (Int64) -> Void) -> [(key: StoreKey, version: UInt64)] {
        lock.withLock {
            var due: [(key: StoreKey, version: UInt64)] = []
            while let (expires, key) = heap.first, expires <= now {
                heap.removeFirst()
                if let known = latest[key], known.expires == expires {
                    due.append((key, known.version))
                }
            }
            if let next = heap.first { schedule(next.priority) }
            return due
        }
    }

    /// The sweep is done with the expired write `version` of `key` (a newer
    /// write keeps its own entry).
    func settle(_ key: StoreKey, version: UInt64) {
        lock.withLock {
            if latest[key]?.version == version { latest[key] = nil }
        }
    }

    /// A write of `key` without an expiry: an older write's expiry no longer applies.
    func forget(_ key: StoreKey, version: UInt64) {
        lock.withLock {
            if let known = latest[key], known.version < version { latest[key] = nil }
        }
    }

    /// Whether the latest known write of `key` has expired by `nowNanos`.
    func hasExpired(_ key: StoreKey, nowNanos: Int64) -> Bool {
        lock.withLock { latest[key].map { $0.expires <= nowNanos } ?? false }
    }

    private func rebuild() {
        heap.removeAll()
        for (key, known) in latest { heap.push(known.expires, key) }
    }
}
