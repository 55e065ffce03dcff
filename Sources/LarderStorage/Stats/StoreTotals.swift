import LarderValueFile
import Synchronization

/// The running totals behind `StoreStats`: seeded by the start-up scan,
/// then moved by every change where it takes effect (under the key's
/// stripe barrier for a put or delete, under the root barrier for a reset
/// or a prefix delete).
///
/// Atomics, not a lock: writes to keys in different stripes publish in
/// parallel, and reading the totals must not wait on them. The three are
/// not one snapshot; each is exact once the changes in flight are done.
package final class StoreTotals: Sendable {
    private let keys = Atomic<Int>(0)
    private let logical = Atomic<Int64>(0)
    private let stored = Atomic<Int64>(0)

    /// Adds a change: a new value (+1 key and its sizes), a replaced one
    /// (0 keys, new sizes minus old), a removed one (negatives).
    package init() {}

    package func add(keys k: Int, logical l: Int64, stored s: Int64) {
        if k != 0 { keys.wrappingAdd(k, ordering: .relaxed) }
        if l != 0 { logical.wrappingAdd(l, ordering: .relaxed) }
        if s != 0 { stored.wrappingAdd(s, ordering: .relaxed) }
    }

    /// Empties the totals (a reset, under the root barrier: nothing
    /// publishes meanwhile); returns how many keys there were.
    package func reset() -> Int {
        logical.store(0, ordering: .relaxed)
        stored.store(0, ordering: .relaxed)
        return keys.exchange(0, ordering: .relaxed)
    }

    package var stats: StoreStats {
        StoreStats(keys: keys.load(ordering: .relaxed), logicalBytes: logical.load(ordering: .relaxed),
                   storedBytes: stored.load(ordering: .relaxed))
    }
}
