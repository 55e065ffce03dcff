import Dispatch
import LarderStorage
import LarderValueFile
import LarderSupport

/// Where store changes meet whoever waits for them, for both faces (the
/// server's `?wait` and `/events`, the embedded store's `watch` and
/// `changes`): a bounded ring of recent changes (for replay after an event
/// id), one-shot key watchers, and subscribers by prefix.
///
/// The store reports a change from under its write barrier, so
/// `storeDidChange` only records it and picks who to tell, under `lock`.
/// Inline subscribers take the event there (a non-blocking yield into a
/// bounded buffer); everything else (waking watchers, queued subscribers)
/// runs on `deliveryQueue`, one change after another, in the order the
/// changes arrived. Nothing waits on a thread: a watcher is a closure, a
/// subscriber an object with a bounded buffer of its own.
///
/// Lock order: `lock` is taken under the store's barriers and never the
/// other way round; subscribers' `end` and watchers' wakes run outside it
/// (they may call back into the hub).
public final class ChangeHub: StoreChangeObserver, @unchecked Sendable {
    /// A remembered change: its order of arrival, event id and the change.
    public typealias Event = ChangeHistory.Entry

    /// A subscriber with what the hub reads of it under `lock`.
    private struct Subscription {
        let prefix: String
        let inline: Bool
        let subscriber: any ChangeSubscriber
    }

    // Everything below is guarded by `lock`.
    private let lock = Lock()
    private var history: ChangeHistory
    private var nextID: UInt64 = 0
    /// Watchers are one-shot: a change to their key removes and wakes them.
    private var watchers: [String: [UInt64: @Sendable () -> Void]] = [:]
    private var watcherTotal = 0
    private var subscriptions: [UInt64: Subscription] = [:]
    /// After `close`: no new watchers or subscribers.
    private var closed = false

    private let deliveryQueue = DispatchQueue(label: "larder.changes", target: .global())
    private let keepAliveTimer: DispatchSourceTimer?

    /// A hub remembering the last `historySize` changes (at least 1); with
    /// `keepAliveEvery`, every subscriber's `keepAlive` is called at that
    /// interval in seconds (the server's SSE heartbeat).
    public init(historySize: Int, keepAliveEvery interval: Double? = nil) {
        history = ChangeHistory(capacity: historySize)
        guard let interval else { keepAliveTimer = nil; return }
        let timer = DispatchSource.makeTimerSource(queue: deliveryQueue)
        keepAliveTimer = timer
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.keepAlive() }
        timer.resume()
    }

    deinit { keepAliveTimer?.cancel() }

    /// How many changes a replay can reach back.
    public var historySize: Int { history.capacity }
    /// Watchers waiting for a change right now.
    public var watcherCount: Int { lock.withLock { watcherTotal } }
    /// Subscribers right now.
    public var subscriberCount: Int { lock.withLock { subscriptions.count } }

    // MARK: - From the store

    public func storeDidChange(_ change: StoreChange) {
        if change.followsGap { return storeDidChangeAfterGap(change) }
        let behind = lock.withLock { () -> [(UInt64, any ChangeSubscriber)] in
            let event = history.record(change)
            // Nothing is hashed or allocated here while nobody listens: the 1 KiB PUT path.
            var wake: [@Sendable () -> Void] = []
            if watcherTotal > 0 {
                if let key = change.key {
                    if let w = watchers.removeValue(forKey: key) { wake = Array(w.values) }
                } else if let prefix = change.prefix {
                    for key in watchers.keys where key.utf8.starts(with: prefix.utf8) {
                        wake += watchers.removeValue(forKey: key)!.values
                    }
                }
                watcherTotal -= wake.count
            }
            var queued: [(UInt64, any ChangeSubscriber)] = []
            var behind: [(UInt64, any ChangeSubscriber)] = []
            for (id, s) in subscriptions where change.concerns(prefix: s.prefix) {
                if !s.inline {
                    queued.append((id, s.subscriber))
                } else if !s.subscriber.receive(event) {
                    behind.append((id, s.subscriber))
                }
            }
            for (id, _) in behind { subscriptions[id] = nil }
            if !wake.isEmpty || !queued.isEmpty {
                // Queued under the lock: deliveries keep the ring's order, so
                // a replay after an event id neither loses nor repeats one.
                let woken = wake, tell = queued
                deliveryQueue.async { [self] in
                    for w in woken { w() }
                    for (id, s) in tell where !s.receive(event) { drop(id, s) }
                }
            }
            return behind
        }
        // Ended outside the lock: `end` may call back into the hub.
        for (_, s) in behind { s.end(.fellBehind) }
    }

    /// `change` comes after changes that were never reported: the ring is
    /// forgotten (a replay from before is a reset), every watcher looks
    /// again and every subscriber, whatever its prefix, is given a `reset`
    /// with this change's id in its place: the client lists what it mirrors
    /// again and resumes after it.
    private func storeDidChangeAfterGap(_ change: StoreChange) {
        let behind = lock.withLock { () -> [(UInt64, any ChangeSubscriber)] in
            history.forget()
            let event = history.record(change)
            let wake = watchers.values.flatMap(\.values)
            watchers = [:]
            watcherTotal = 0
            var queued: [(UInt64, any ChangeSubscriber)] = []
            var behind: [(UInt64, any ChangeSubscriber)] = []
            for (id, s) in subscriptions {
                if !s.inline {
                    queued.append((id, s.subscriber))
                } else if !s.subscriber.receiveReset(id: event.id) {
                    behind.append((id, s.subscriber))
                }
            }
            for (id, _) in behind { subscriptions[id] = nil }
            let tell = queued
            deliveryQueue.async { [self] in
                for w in wake { w() }
                for (id, s) in tell where !s.receiveReset(id: event.id) { drop(id, s) }
            }
            return behind
        }
        for (_, s) in behind { s.end(.fellBehind) }
    }

    // MARK: - Watchers

    /// Calls `wake` once, on the next change that may touch `key` (a change
    /// of it, or a bulk delete whose prefix covers it), or when the hub
    /// closes. Returns an id for `unwatch`; nil when already closed.
    public func watch(_ key: String, _ wake: @escaping @Sendable () -> Void) -> UInt64? {
        lock.withLock {
            guard !closed else { return nil }
            nextID += 1
            watchers[key, default: [:]][nextID] = wake
            watcherTotal += 1
            return nextID
        }
    }

    /// Forgets a watcher that has not been woken.
    public func unwatch(_ key: String, id: UInt64) {
        lock.withLock {
            guard watchers[key]?.removeValue(forKey: id) != nil else { return }
            watcherTotal -= 1
            if watchers[key]?.isEmpty == true { watchers[key] = nil }
        }
    }

    // MARK: - Subscribers

    /// Adds `subscriber` for the changes under `prefix`. With `after`, the
    /// changes the ring still holds after that event id are given first
    /// (a `reset` instead when the ring no longer reaches back to it), under the lock: live changes
    /// follow with none missed or repeated (a change is given only to the
    /// subscribers it found when it was recorded). Returns an id for
    /// `unsubscribe`; nil, after `end`, when the hub is closed or the
    /// subscriber could not take the replay.
    public func subscribe(_ subscriber: any ChangeSubscriber, prefix: String, after eventID: String?) -> UInt64? {
        let outcome: Result<UInt64, ChangeSubscriberEnd> = lock.withLock {
            guard !closed else { return .failure(.closed) }
            if let eventID {
                if let replay = history.replay(after: eventID, concerning: prefix) {
                    for event in replay where !subscriber.receive(event) { return .failure(.fellBehind) }
                } else if !subscriber.receiveReset(id: history.newestID ?? eventID) {
                    return .failure(.fellBehind)
                }
            }
            nextID += 1
            subscriptions[nextID] = Subscription(prefix: prefix, inline: subscriber.receivesInline, subscriber: subscriber)
            return .success(nextID)
        }
        switch outcome {
        case .success(let id): return id
        case .failure(let reason): subscriber.end(reason); return nil
        }
    }

    /// Forgets a subscriber (its reader went away); `end` is not called.
    public func unsubscribe(_ id: UInt64) {
        _ = lock.withLock { subscriptions.removeValue(forKey: id) }
    }

    /// A queued subscriber that could not take an event: forgotten and ended.
    private func drop(_ id: UInt64, _ subscriber: any ChangeSubscriber) {
        // Not found: it unsubscribed (or the hub closed) meanwhile.
        let found = lock.withLock { subscriptions.removeValue(forKey: id) != nil }
        if found { subscriber.end(.fellBehind) }
    }

    private func keepAlive() {
        let all = lock.withLock { subscriptions.values.map(\.subscriber) }
        for s in all { s.keepAlive() }
    }

    // MARK: - Closing

    /// Ends every subscriber (`.closed`) and wakes every watcher, after the
    /// deliveries already queued; later watches and subscriptions are
    /// refused. For a store that is closing (the embedded store's `close`).
    public func close() {
        let (ended, woken) = lock.withLock { () -> ([any ChangeSubscriber], [@Sendable () -> Void]) in
            guard !closed else { return ([], []) }
            closed = true
            defer { subscriptions = [:]; watchers = [:]; watcherTotal = 0 }
            return (subscriptions.values.map(\.subscriber), watchers.values.flatMap(\.values))
        }
        keepAliveTimer?.cancel()
        deliveryQueue.async {
            for s in ended { s.end(.closed) }
            for w in woken { w() }
        }
    }
}
