import LarderStorage
import Synchronization

/// Whether a namespace has been written: the API says a namespace exists
/// from its first write, though the server opens its store at its first
/// request of any kind (a read of a new namespace sees the fixtures, and a
/// watch on it must be woken by that first write). It sits between the
/// store and the namespace's change hub and is set by the first change the
/// store reports, from this server or, on PostgreSQL, another. A namespace
/// reopened at start holds data from an earlier run: set from the start.
final class FirstWriteMark: StoreChangeObserver {
    private let downstream: StoreChangeObserver
    private let written = Atomic(false)

    init(before downstream: StoreChangeObserver) { self.downstream = downstream }

    var isSet: Bool { written.load(ordering: .relaxed) }

    func set() { written.store(true, ordering: .relaxed) }

    func storeDidChange(_ change: StoreChange) {
        // A load, not a store, on every change after the first: the
        // namespace's PUT path pays no write to a shared cache line.
        if !written.load(ordering: .relaxed) { written.store(true, ordering: .relaxed) }
        downstream.storeDidChange(change)
    }
}
