import Dispatch
import LarderSupport

/// One connection that `LISTEN`s on the channels of every store of a
/// database (the default store's and each namespace's), so a thousand
/// namespaces cost one listening connection, not a thousand. A
/// notification goes to the subscriber of its channel. On a break the
/// connection is made again after a backoff (100 ms doubling to 2 s), every
/// channel is listened to again, and each subscriber is told (`connected`)
/// so it reads what committed while nobody listened.
///
/// The connection is also lent, one turn at a time (`withTurn`), to the
/// change feeds' reads: it is idle but for notifications, so a writer
/// waiting for its change to be delivered never competes with other
/// writers for the pool.
///
/// Locking: `state` guards everything mutable. It is never held across
/// an await or a call into a subscriber.
final class PGListener: @unchecked Sendable {
    /// What a change feed hears from the listener; called on the
    /// listener's threads, never under its lock.
    struct Subscriber: Sendable {
        /// A `NOTIFY` on the channel, with its payload.
        let notified: @Sendable (_ payload: String) -> Void
        /// Listening (again): what committed meanwhile should be read.
        let connected: @Sendable () -> Void
    }

    private let pool: PGPool
    private let logger: Logger

    /// Guarded by `state`.
    private struct State {
        var connection: PGConnection?
        var subscribers: [String: Subscriber] = [:]
        var brokenReason: String?
        var backoff: Double = 0.1
        var connecting = false
        var stopped = false
        /// Whose turn it is with the connection; the rest wait in order.
        var busy = false
        var turns: [CheckedContinuation<Bool, Never>] = []
    }
    private let state = Locked(State())

    init(pool: PGPool, logger: Logger) {
        self.pool = pool
        self.logger = logger
    }

    /// Why nothing is listening, while nothing is.
    var brokenReason: String? { state.withLock { $0.brokenReason } }

    /// Listens on `channel` for `subscriber` (connecting the listener on
    /// the first subscription). `connected` is called once the channel is
    /// listened to, and again after every reconnection.
    func subscribe(_ channel: String, _ subscriber: Subscriber) {
        let (connection, connect) = state.withLock { s -> (PGConnection?, Bool) in
            s.subscribers[channel] = subscriber
            let connect = s.connection == nil && !s.connecting && !s.stopped
            if connect { s.connecting = true }
            return (s.connection, connect)
        }
        if connect { listen() }
        // A connection made after this sees the channel in `subscribers`;
        // one made before is told here. Both may happen: LISTEN twice is harmless.
        guard let connection else { return }
        pool.executor.run { [self] in
            do {
                _ = try await withTurn(on: connection) { try await $0.query("LISTEN \"\(channel)\"") }
                subscriber.connected()
            } catch {
                logger.debug("postgres: LISTEN \(channel) failed: \(error)")
            }
        }
    }

    /// Stops delivering `channel`'s notifications.
    func unsubscribe(_ channel: String) {
        let connection = state.withLock { s -> PGConnection? in
            s.subscribers[channel] = nil
            return s.connection
        }
        guard let connection else { return }
        pool.executor.run { [self] in
            _ = try? await withTurn(on: connection) { try await $0.query("UNLISTEN \"\(channel)\"") }
        }
    }

    /// Closes the connection; nothing is delivered after this.
    func stop() {
        let (connection, turns) = state.withLock { s -> (PGConnection?, [CheckedContinuation<Bool, Never>]) in
            s.stopped = true
            defer { s.connection = nil; s.subscribers = [:]; s.turns = [] }
            return (s.connection, s.turns)
        }
        connection?.close()
        // Their reads fail; the one running finds the connection closed.
        turns.forEach { $0.resume(returning: false) }
    }

    /// Runs `body` on the listening connection when it is its turn; nil
    /// when there is no connection (the caller reads through the pool).
    func withConnection<T>(schema: String, _ body: (PGConnection) async throws -> T) async throws -> T? {
        guard let connection = state.withLock({ $0.connection }), !connection.isBroken else { return nil }
        return try await withTurn(on: connection) { connection in
            try await connection.use(schema: schema)
            return try await body(connection)
        }
    }

    /// One user of the connection at a time, in the order they came. Once
    /// stopped, nobody gets a turn: the waiting ones fail, and never share
    /// the connection with the one whose turn it was.
    private func withTurn<T>(on connection: PGConnection, _ body: (PGConnection) async throws -> T) async throws -> T {
        let granted = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let now = state.withLock { s -> Bool? in
                if s.stopped { return false }
                if s.busy { s.turns.append(continuation); return nil }
                s.busy = true
                return true
            }
            if let now { continuation.resume(returning: now) }
        }
        guard granted else { throw PGError.connection("the listener is closed") }
        defer {
            let next = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                if s.turns.isEmpty { s.busy = false; return nil }
                return s.turns.removeFirst()
            }
            next?.resume(returning: true)
        }
        do { return try await body(connection) } catch { throw PGPool.mapped(error) }
    }

    /// Connects, listens on every channel subscribed so far, and tells
    /// their subscribers; on a failure, again after the backoff.
    private func listen() {
        pool.executor.run { [self] in
            do {
                let connection = try await pool.connectDedicated()
                connection.onNotification { [weak self] channel, payload in self?.notify(channel, payload) }
                let channels = state.withLock { s -> [String: Subscriber]? in
                    s.connecting = false
                    guard !s.stopped else { return nil }
                    s.connection = connection
                    s.brokenReason = nil
                    s.backoff = 0.1
                    return s.subscribers
                }
                guard let channels else { connection.close(); return }
                connection.onBreak { [weak self] reason in self?.broke(connection, reason) }
                for (channel, subscriber) in channels {
                    _ = try await withTurn(on: connection) { try await $0.query("LISTEN \"\(channel)\"") }
                    subscriber.connected()
                }
            } catch {
                let connection = state.withLock { $0.connection }
                if let connection { connection.close() } else { broke(nil, "\(error)") }
            }
        }
    }

    private func notify(_ channel: String, _ payload: String) {
        state.withLock { $0.subscribers[channel] }?.notified(payload)
    }

    /// The connection broke (or never came): connect again after the backoff.
    private func broke(_ connection: PGConnection?, _ reason: String) {
        let delay = state.withLock { s -> Double? in
            // Only the current connection's break counts (or a failed connect).
            guard !s.stopped, connection == nil || s.connection === connection else { return nil }
            if s.brokenReason == nil { logger.error("postgres: change listener lost: \(reason)") }
            s.brokenReason = reason
            s.connection = nil
            s.connecting = true
            let d = s.backoff
            s.backoff = min(s.backoff * 2, 2)
            return d
        }
        guard let delay else { return }
        PostgresExecutor.queue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.listen() }
    }
}
