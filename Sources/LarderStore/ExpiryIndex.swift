import LarderSupport

/// Keys with an expiry time, earliest first, for the sweep that removes
/// their files. Reads never depend on it (every read checks the expiry in
/// the value's own metadata); it only decides when to look.
///
/// A min-heap with lazy deletion: a rewrite pushes a new entry and the
/// dictionary remembers the latest time per key, so stale entries are
/// skipped when they surface, and the heap is rebuilt when they pile up.
final class ExpiryIndex: @unchecked Sendable {
    private struct Entry {
        let expires: Int64
        let key: StoreKey
    }
    // Everything below is guarded by `lock`.
    private let lock = Lock()
    private var heap: [Entry] = []
    private var latest: [StoreKey: Int64] = [:]

    var count: Int { lock.withLock { latest.count } }

    /// Records that `key` expires at `expires`; returns true when that is
    /// now the earliest time (the sweep's timer must move).
    @discardableResult
    func add(_ key: StoreKey, expires: Int64) -> Bool {
        lock.withLock {
            latest[key] = expires
            push(Entry(expires: expires, key: key))
            if heap.count > 2 * latest.count + 1024 { rebuild() }
            return heap[0].expires == expires
        }
    }

    /// Removes and returns the keys due at `now`.
    func takeDue(now: Int64) -> [StoreKey] {
        lock.withLock {
            var due: [StoreKey] = []
            while let top = heap.first, top.expires <= now {
                pop()
                if latest[top.key] == top.expires {
                    latest[top.key] = nil
                    due.append(top.key)
                }
            }
            return due
        }
    }

    /// The earliest expiry recorded, if any.
    var next: Int64? { lock.withLock { heap.first?.expires } }

    private func rebuild() {
        heap = []
        for (key, expires) in latest { push(Entry(expires: expires, key: key)) }
    }

    private func push(_ entry: Entry) {
        heap.append(entry)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].expires < heap[parent].expires else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private func pop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count && heap[l].expires < heap[smallest].expires { smallest = l }
            if r < heap.count && heap[r].expires < heap[smallest].expires { smallest = r }
            if smallest == i { return }
            heap.swapAt(i, smallest)
            i = smallest
        }
    }
}
