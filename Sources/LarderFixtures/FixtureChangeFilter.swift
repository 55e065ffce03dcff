import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderSupport

/// Sits between the store and the change feed when fixtures are mounted,
/// and reports changes as clients see them through both layers: a store
/// value deleted (or expired) over a fixture is a put of the fixture, and a
/// bulk delete says how many fixtures its prefix reads as now.
///
/// Called from under the store's write barriers, like any observer; it only
/// rewrites the change and passes it on.
final class FixtureChangeFilter: StoreChangeObserver {
    private let downstream: StoreChangeObserver?
    /// Set once, right after the store opens (the fixtures compile after
    /// the store has taken the data directory's lock). Until then changes
    /// pass unchanged: only the start-up expiry sweep can make them, before
    /// any client is connected.
    private let fixtures = Locked<FixtureLayer?>(nil)

    init(downstream: StoreChangeObserver?) {
        self.downstream = downstream
    }

    func attach(_ layer: FixtureLayer) {
        fixtures.withLock { $0 = layer }
    }

    func storeDidChange(_ change: StoreChange) {
        guard let downstream else { return }
        guard let layer = fixtures.withLock({ $0 }) else { return downstream.storeDidChange(change) }
        switch change.kind {
        case .delete, .expire:
            if let key = change.key {
                if let fixture = layer.metadata(key) {
                    var reverted = StoreChange.reverted(key, to: fixture, version: change.version)
                    reverted.followsGap = change.followsGap
                    return downstream.storeDidChange(reverted)
                }
            } else if let prefix = change.prefix {
                var bulk = change
                bulk.fixtures = layer.count(under: prefix)
                return downstream.storeDidChange(bulk)
            }
        case .put:
            break
        }
        downstream.storeDidChange(change)
    }
}
