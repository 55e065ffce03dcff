/// A binary min-heap of values by priority: the earliest first. The event
/// loops' timers and the disk store's expiry index keep one each, both with
/// lazy deletion (a stale entry is skipped when it surfaces).
public struct MinHeap<Priority: Comparable, Value> {
    @usableFromInline var entries: [(priority: Priority, value: Value)] = []

    public init() {}

    @inlinable public var count: Int { entries.count }
    @inlinable public var isEmpty: Bool { entries.isEmpty }
    /// The entry of the lowest priority.
    @inlinable public var first: (priority: Priority, value: Value)? { entries.first }

    @inlinable public mutating func removeAll() { entries.removeAll() }

    @inlinable public mutating func push(_ priority: Priority, _ value: Value) {
        entries.append((priority, value))
        var i = entries.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard entries[i].priority < entries[parent].priority else { break }
            entries.swapAt(i, parent)
            i = parent
        }
    }

    /// Removes the first entry (there must be one).
    @inlinable public mutating func removeFirst() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < entries.count && entries[l].priority < entries[smallest].priority { smallest = l }
            if r < entries.count && entries[r].priority < entries[smallest].priority { smallest = r }
            if smallest == i { return }
            entries.swapAt(i, smallest)
            i = smallest
        }
    }
}
