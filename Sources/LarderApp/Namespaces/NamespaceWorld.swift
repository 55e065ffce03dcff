import Dispatch
import LarderHTTP
import LarderSharing
import LarderStorage
import LarderSupport
import Synchronization

/// One namespace's whole API: its store, its change hub (watches, the
/// change feed and its `Last-Event-ID` history), its fault rules, and the
/// route table the default namespace uses, built over them. Nothing here
/// is shared with another namespace but the read-only fixtures under the
/// store.
final class NamespaceWorld: Sendable {
    let name: String
    let store: any ValueStore
    let hub: ChangeHub
    let table: RouteTable
    /// When the last request for this namespace came (a monotonic clock,
    /// which a change of the wall clock does not move), for `--namespace-idle`.
    private let lastRequest: Atomic<UInt64>

    init(name: String, store: any ValueStore, hub: ChangeHub, table: RouteTable) {
        self.name = name
        self.store = store
        self.hub = hub
        self.table = table
        lastRequest = Atomic(Self.now())
    }

    func touch() { lastRequest.store(Self.now(), ordering: .relaxed) }

    /// Nanoseconds since the last request.
    var idleNanos: Int64 { Int64(Self.now() &- lastRequest.load(ordering: .relaxed)) }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Whether a client is waiting on it (a watch, an event stream): such a
    /// namespace is in use even when no request came for a while.
    var hasListeners: Bool { hub.watcherCount + hub.subscriberCount > 0 }
}
