import LarderModel
import Dispatch
import LarderHTTP
import LarderStore
import LarderSupport

/// Where store changes meet the clients waiting for them: a bounded ring of
/// recent events (for `Last-Event-ID` replay), watchers by key, and event
/// stream subscribers by prefix.
///
/// The store reports a change from under its write barrier, so
/// `storeDidChange` only records it and picks who to tell, under `lock`;
/// the telling (formatting, waking watchers, writing to streams) runs on
/// `deliveryQueue`, one change after another, in the order they arrived.
final class ChangeHub: StoreChangeObserver, @unchecked Sendable {
    /// A remembered change: its order of arrival, SSE `id:` and the change.
    typealias Event = ChangeHistory.Entry

    private final class Subscriber: Sendable {
        let prefix: String
        let stream: HTTPPushStream
        /// Events up to this sequence were replayed when it subscribed.
        let replayedThrough: UInt64
        init(prefix: String, stream: HTTPPushStream, replayedThrough: UInt64) {
            self.prefix = prefix
            self.stream = stream
            self.replayedThrough = replayedThrough
        }
    }

    let historySize: Int
    let heartbeat: Double

    // Everything below is guarded by `lock`.
    private let lock = Lock()
    private var history: ChangeHistory
    private var nextID: UInt64 = 0
    /// Watchers are one-shot: a change to their key removes and wakes them.
    private var watchers: [String: [UInt64: @Sendable () -> Void]] = [:]
    private var watcherTotal = 0
    private var subscribers: [UInt64: Subscriber] = [:]

    private let deliveryQueue = DispatchQueue(label: "larder.changes", target: .global())
    private let heartbeatTimer: DispatchSourceTimer

    init(historySize: Int, heartbeat: Double) {
        self.historySize = max(1, historySize)
        self.history = ChangeHistory(capacity: historySize)
        self.heartbeat = heartbeat
        heartbeatTimer = DispatchSource.makeTimerSource(queue: deliveryQueue)
        heartbeatTimer.schedule(deadline: .now() + heartbeat, repeating: heartbeat, leeway: .milliseconds(100))
        heartbeatTimer.setEventHandler { [weak self] in self?.sendHeartbeat() }
        heartbeatTimer.resume()
    }

    deinit { heartbeatTimer.cancel() }

    var watcherCount: Int { lock.withLock { watcherTotal } }
    var subscriberCount: Int { lock.withLock { subscribers.count } }

    // MARK: - From the store

    func storeDidChange(_ change: StoreChange) {
        lock.withLock {
            let event = history.record(change)
            var wake: [@Sendable () -> Void] = []
            if let key = change.key {
                if let w = watchers.removeValue(forKey: key) { wake = Array(w.values) }
            } else if let prefix = change.prefix {
                for key in watchers.keys where key.utf8.starts(with: prefix.utf8) {
                    wake += watchers.removeValue(forKey: key)!.values
                }
            }
            watcherTotal -= wake.count
            let tell = subscribers.values.filter { change.concerns(prefix: $0.prefix) }
            guard !wake.isEmpty || !tell.isEmpty else { return }
            // Queued under the lock: streams get events in the ring's order,
            // so replay by position after Last-Event-ID neither loses nor repeats one.
            let woken = wake
            deliveryQueue.async {
                for w in woken { w() }
                guard !tell.isEmpty else { return }
                let text = Self.format(event)
                for s in tell where event.sequence > s.replayedThrough { s.stream.write(text) }
            }
        }
    }

    // MARK: - Watchers

    /// Calls `wake` once, on the next change to `key`. Returns an id for `unwatch`.
    func watch(_ key: String, _ wake: @escaping @Sendable () -> Void) -> UInt64 {
        lock.withLock {
            nextID += 1
            watchers[key, default: [:]][nextID] = wake
            watcherTotal += 1
            return nextID
        }
    }

    func unwatch(_ key: String, id: UInt64) {
        lock.withLock {
            guard watchers[key]?.removeValue(forKey: id) != nil else { return }
            watcherTotal -= 1
            if watchers[key]?.isEmpty == true { watchers[key] = nil }
        }
    }

    // MARK: - Event streams

    /// Adds an event stream for changes under `prefix`. Events the ring still
    /// holds after `lastEventID` are written first (all it holds when that id
    /// is unknown); live events follow with none missed or repeated.
    func subscribe(prefix: String, lastEventID: String?, stream: HTTPPushStream) {
        let id: UInt64 = lock.withLock {
            var replay: [Event] = []
            if let lastEventID {
                replay = history.entries(after: lastEventID, concerning: prefix)
            }
            // Written under the lock: the stream holds them before any live event.
            for event in replay { stream.write(Self.format(event)) }
            nextID += 1
            subscribers[nextID] = Subscriber(prefix: prefix, stream: stream, replayedThrough: history.lastSequence)
            return nextID
        }
        stream.whenClosed { [weak self] in self?.unsubscribe(id) }
    }

    private func unsubscribe(_ id: UInt64) {
        _ = lock.withLock { subscribers.removeValue(forKey: id) }
    }

    private func sendHeartbeat() {
        let all = lock.withLock { Array(subscribers.values) }
        let comment = Array(": keep-alive\n\n".utf8)
        for s in all { s.stream.write(comment) }
    }

    /// One SSE event: `id`, `event` and a one-line JSON `data`.
    static func format(_ event: Event) -> [UInt8] {
        let c = event.change
        return Array("id: \(event.id)\nevent: \(c.kind.rawValue)\ndata: ".utf8) + ModelJSON.encode(c.data) + Array("\n\n".utf8)
    }
}

