import LarderHTTP
import LarderRouting
import LarderSharing
import LarderStorage
import LarderSupport
import Synchronization

/// One namespace's whole API: its store, its change hub (watches, the
/// change feed and its `Last-Event-ID` history), its fault rules, and the
/// route table the default namespace uses, built over them. Nothing here
/// is shared with another namespace but the read-only fixtures under the
/// store.
package final class NamespaceWorld: PrefixedHandler {
    let name: String
    package let store: any ValueStore
    let hub: ChangeHub
    let table: RouteTable
    /// Its request journal (nil with `--journal 0`).
    package let journal: RequestJournal?
    /// Set by its first write: until then the namespace is open but does
    /// not exist as far as clients see (not listed, not counted, a `DELETE
    /// /ns/<name>` is a 404).
    let firstWrite: FirstWriteMark
    /// Its fault rules (nil without `--allow-faults`).
    package let faults: FaultBook?
    /// The idle sweep's tick at the last request for this namespace, or at
    /// the last sweep that found a client waiting on it (a counter, not a
    /// clock: a request pays one atomic store), for `--namespace-idle`.
    private let lastTick: Atomic<UInt64>

    init(name: String, store: any ValueStore, hub: ChangeHub, table: RouteTable, journal: RequestJournal?,
         firstWrite: FirstWriteMark, faults: FaultBook? = nil, tick: UInt64 = 0) {
        self.name = name
        self.store = store
        self.hub = hub
        self.table = table
        self.journal = journal
        self.firstWrite = firstWrite
        self.faults = faults
        lastTick = Atomic(tick)
    }

    /// Whether it exists for clients: written since it was made, or kept
    /// from an earlier run.
    var exists: Bool { firstWrite.isSet }

    func touch(_ tick: UInt64) { lastTick.store(tick, ordering: .relaxed) }

    /// Sweep ticks since the last request (or the last sweep that found a listener).
    func idleTicks(now: UInt64) -> UInt64 { now &- lastTick.load(ordering: .relaxed) }

    /// Clients waiting on it now (watches, event streams, journal long
    /// polls): a namespace with one is in use even when no request came
    /// for a while.
    var listenerCount: Int { hub.watcherCount + hub.subscriberCount + (journal?.waiterCount ?? 0) }
}
