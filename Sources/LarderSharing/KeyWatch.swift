import Dispatch
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// Waits for a key's value to change: the one watch behind the server's
/// `GET ?wait=` and the embedded store's `watch(_:)`.
///
/// Each look registers a one-shot watcher with the hub first and then opens
/// the key, in that order, so no change slips between a look and the next
/// wake. The disk store answers the open now, a store whose reads are
/// round trips (PostgreSQL) later (`StoreReply`), and no thread waits
/// either way. Between looks a watch is a closure in
/// the hub: no thread, no timer.
///
/// `look` decides what a look means (an HTTP answer, a stream element) and
/// owns the `StoredValue` it is given (it must close it). With a `queue`,
/// looks run there, one at a time, and a change that comes while a look is
/// queued folds into it; without one, a look runs where the wake came from
/// (the hub's delivery queue, or the caller of `start`).
public final class KeyWatch: @unchecked Sendable {
    /// What a look decided.
    public enum Verdict: Sendable {
        /// Nothing worth reporting yet (or reported, and more may come): look again at the next change.
        case waiting
        /// The watch is over.
        case done
    }

    public let key: StoreKey
    private let store: any ValueStore
    private let hub: ChangeHub
    private let queue: DispatchQueue?
    private let look: @Sendable (Result<StoredValue, any Error>) -> Verdict
    private let hubClosed: @Sendable () -> Void
    // Guarded by `lock`.
    private let lock = Lock()
    private var watcherID: UInt64?
    /// Ended (done, cancelled, or the hub closed): no more registering or looking.
    private var finished = false

    /// A watch of `key` in `store`, woken by `hub` (the hub `store` reports
    /// its changes to). `hubClosed` runs once if the hub closes while it waits.
    public init(key: StoreKey, store: any ValueStore, hub: ChangeHub, queue: DispatchQueue? = nil,
                hubClosed: @escaping @Sendable () -> Void = {},
                look: @escaping @Sendable (Result<StoredValue, any Error>) -> Verdict) {
        self.key = key
        self.store = store
        self.hub = hub
        self.queue = queue
        self.hubClosed = hubClosed
        self.look = look
    }

    /// The first look: registers at once (a change after `start` returns is
    /// seen), then looks, here or on the queue.
    public func start() {
        guard register() else { return }
        if let queue { queue.async { self.open() } } else { open() }
    }

    /// Ends the watch: no look starts after it. Safe to call more than once.
    public func end() {
        let id: UInt64? = lock.withLock {
            finished = true
            defer { watcherID = nil }
            return watcherID
        }
        if let id { hub.unwatch(key.string, id: id) }
    }

    public var isFinished: Bool { lock.withLock { finished } }

    /// The key may have changed (on the hub's delivery queue): look again.
    private func wake() {
        guard !isFinished else { return }
        guard let queue else {
            if register() { open() }
            return
        }
        // Registered when the look starts, not now: changes until then fold into it.
        queue.async { if self.register() { self.open() } }
    }

    /// Registers for the next change; false when the watch is over.
    private func register() -> Bool {
        guard let id = hub.watch(key.string, { [self] in wake() }) else {
            let first = lock.withLock { () -> Bool in
                defer { finished = true }
                return !finished
            }
            if first { hubClosed() }
            return false
        }
        let stillWaiting = lock.withLock { () -> Bool in
            watcherID = id
            return !finished
        }
        // Ended meanwhile: `end` may have removed the previous id, not this one.
        if !stillWaiting { hub.unwatch(key.string, id: id) }
        return stillWaiting
    }

    private func open() {
        store.open(key).whenDone { [self] opened in
            guard !isFinished else {
                if case .success(let value) = opened { value.close() }
                return
            }
            if look(opened) == .done { end() }
        }
    }
}
