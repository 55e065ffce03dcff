import Foundation
import LarderKit
import LarderDiskStore
import LarderStorage
import LarderValueFile

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
        /// The id of the last event the feed's buffer took, which its reader
        /// will get before the error ending a feed that fell behind.
        var lastID: String?
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
        let (wake, behind) = lock.withLock { () -> ([KeyWatcher], [Feed]) in
            _ = history.record(change)
            let event = change.event
            var behind: [Feed] = []
            for (id, feed) in feeds where change.concerns(prefix: feed.prefix) {
                if case .dropped = feed.continuation.yield(event) {
                    // Its buffer is full: nobody reads it (fast enough).
                    // Ended rather than grown forever, as the server drops a
                    // slow SSE reader; the caller resumes from `lastID`.
                    feeds[id] = nil
                    behind.append(feed)
                } else {
                    feeds[id]?.lastID = event.id
                }
            }
            return (watchers.values.filter { Self.change(change, covers: $0.key) }, behind)
        }
        // Finished outside the lock: `finish` runs the stream's
        // `onTermination`, which calls `removeFeed` and takes the lock.
        for feed in behind { feed.continuation.finish(throwing: Self.fellBehind(lastID: feed.lastID)) }
        for w in wake { w.changed() }
    }

    /// Whether `change` may have changed `key`'s value: a change of that key,
    /// or a bulk delete whose prefix the key lies under.
    private static func change(_ change: StoreChange, covers key: String) -> Bool {
        if let changed = change.key { return changed == key }
        guard let prefix = change.prefix else { return false }
        return key.utf8.starts(with: prefix.utf8)
    }

    /// The error ending a feed whose buffer filled up: the server's 503
    /// `busy`, naming the id to resume after.
    static func fellBehind(lastID: String?) -> LarderError {
        LarderError.server(status: 503, error: ErrorBody(
            .busy, "the change feed fell behind; resume with after: \(lastID ?? "")"))
    }

    /// Adds a feed of changes under `prefix`, first replaying what the
    /// history holds after `eventID` (all of it when the id is unknown).
    /// `continuation` must have a bounded buffer: a feed whose buffer
    /// overflows ends with `fellBehind`. Returns the id for `removeFeed`,
    /// nil when already closed or ended during the replay.
    func addFeed(prefix: String, after eventID: String?,
                 _ continuation: AsyncThrowingStream<ChangeEvent, any Error>.Continuation) -> UInt64? {
        enum Outcome { case added(UInt64), closed, fellBehind(String?) }
        let outcome: Outcome = lock.withLock {
            guard !closed else { return .closed }
            var lastID = eventID
            if let eventID {
                for entry in history.entries(after: eventID, concerning: prefix) {
                    let event = entry.change.event
                    if case .dropped = continuation.yield(event) { return .fellBehind(lastID) }
                    lastID = event.id
                }
            }
            nextID += 1
            feeds[nextID] = Feed(prefix: prefix, continuation: continuation, lastID: lastID)
            return .added(nextID)
        }
        switch outcome {
        case .added(let id): return id
        case .closed: continuation.finish()
        case .fellBehind(let lastID): continuation.finish(throwing: Self.fellBehind(lastID: lastID))
        }
        return nil
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
