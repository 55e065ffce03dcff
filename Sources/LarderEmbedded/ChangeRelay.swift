import Foundation
import LarderKit
import LarderStore

/// The embedded store's change observer: keeps the recent history for
/// `changes(prefix:after:)` replay and hands each change to the feeds and
/// watchers it concerns.
///
/// `storeDidChange` runs under the store's write barrier, so it only
/// records, yields to stream continuations (non-blocking, buffered) and asks
/// watchers to schedule a read. Everything is guarded by `lock`; yielding
/// under it keeps every feed in history order, so a replay followed by live
/// events neither repeats nor misses one.
final class ChangeRelay: StoreChangeObserver, @unchecked Sendable {
    private struct Feed {
        let prefix: String
        let continuation: AsyncThrowingStream<ChangeEvent, any Error>.Continuation
    }

    // Guarded by `lock`.
    private let lock = NSLock()
    private var history: ChangeHistory
    private var feeds: [UInt64: Feed] = [:]
    private var watchers: [UInt64: KeyWatcher] = [:]
    private var nextID: UInt64 = 0
    /// After `close`, new feeds and watchers end at once.
    private var closed = false

    init(historySize: Int) {
        history = ChangeHistory(capacity: historySize)
    }

    func storeDidChange(_ change: StoreChange) {
        let wake: [KeyWatcher] = lock.withLock {
            _ = history.record(change)
            let event = change.event
            for feed in feeds.values where change.concerns(prefix: feed.prefix) {
                feed.continuation.yield(event)
            }
            return watchers.values.filter { Self.change(change, covers: $0.key) }
        }
        for w in wake { w.changed() }
    }

    /// Whether `change` may have changed `key`'s value: a change of that key,
    /// or a bulk delete whose prefix the key lies under.
    private static func change(_ change: StoreChange, covers key: String) -> Bool {
        if let changed = change.key { return changed == key }
        guard let prefix = change.prefix else { return false }
        return key.utf8.starts(with: prefix.utf8)
    }

    /// Adds a feed of changes under `prefix`, first replaying what the
    /// history holds after `eventID` (all of it when the id is unknown).
    /// Returns the id for `removeFeed`, nil when already closed.
    func addFeed(prefix: String, after eventID: String?,
                 _ continuation: AsyncThrowingStream<ChangeEvent, any Error>.Continuation) -> UInt64? {
        let id: UInt64? = lock.withLock {
            guard !closed else { return nil }
            if let eventID {
                for entry in history.entries(after: eventID, concerning: prefix) {
                    continuation.yield(entry.change.event)
                }
            }
            nextID += 1
            feeds[nextID] = Feed(prefix: prefix, continuation: continuation)
            return nextID
        }
        if id == nil { continuation.finish() }
        return id
    }

    func removeFeed(_ id: UInt64) {
        _ = lock.withLock { feeds.removeValue(forKey: id) }
    }

    /// Registers `watcher` for changes to its key; nil when already closed.
    func addWatcher(_ watcher: KeyWatcher) -> UInt64? {
        let id: UInt64? = lock.withLock {
            guard !closed else { return nil }
            nextID += 1
            watchers[nextID] = watcher
            return nextID
        }
        if id == nil { watcher.finish() }
        return id
    }

    func removeWatcher(_ id: UInt64) {
        _ = lock.withLock { watchers.removeValue(forKey: id) }
    }

    /// Ends every feed and watch: the store is closing.
    func close() {
        let (f, w) = lock.withLock { () -> ([Feed], [KeyWatcher]) in
            closed = true
            defer { feeds = [:]; watchers = [:] }
            return (Array(feeds.values), Array(watchers.values))
        }
        for feed in f { feed.continuation.finish() }
        for watcher in w { watcher.finish() }
    }
}
