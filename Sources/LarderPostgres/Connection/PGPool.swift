import Dispatch
import FoundationEssentials
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// A bounded pool of database connections, shared by the stores of every
/// schema of one database (the default store's and its namespaces'): each
/// call names the schema it works in, and the connection is pointed at it
/// (`PGConnection.use(schema:)`) before the caller gets it. A caller waits for a free one
/// as a suspended task (memory, no thread). While the database is down the
/// pool fails fast: after a failed connect, further connects wait out a
/// backoff (100 ms doubling to 5 s) and callers get
/// `StoreError.backendUnavailable` at once instead of queueing.
final class PGPool: @unchecked Sendable {
    let conninfo: String
    let maxConnections: Int
    /// Statements run on every new connection before use.
    let setup: [String]
    let connectTimeout: Double
    let commandTimeout: Double
    /// Longest a caller waits for a free connection.
    let acquireTimeout: Double
    private let logger: Logger

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<PGConnection, Error>
    }

    /// Guarded by `lock`.
    private struct State {
        var idle: [PGConnection] = []
        var open = 0
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        /// Why the last connect failed; nil once one succeeds.
        var downReason: String?
        var nextAttemptNanos: Int64 = 0
        var backoffNanos: Int64 = 0
        var closed = false
    }
    private let state = Locked(State())
    /// Runs the tasks of the stores on this pool, and watches its connections.
    let executor = PostgresExecutor.next()

    init(conninfo: String, maxConnections: Int, setup: [String], connectTimeout: Double = 5,
         commandTimeout: Double = 10, acquireTimeout: Double = 10, logger: Logger) {
        self.conninfo = conninfo
        self.maxConnections = max(1, maxConnections)
        self.setup = setup
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.acquireTimeout = acquireTimeout
        self.logger = logger
    }

    /// Why the database cannot be reached, when the last attempt failed.
    var unavailableReason: String? { state.withLock { $0.downReason } }

    /// A new connection outside the pool (the change listener's), set up
    /// like the pool's.
    func connectDedicated() async throws -> PGConnection {
        let connection = try await PGConnection.connect(conninfo: conninfo, timeout: connectTimeout, commandTimeout: commandTimeout,
                                                        loop: executor.loop)
        do {
            for statement in setup { _ = try await connection.query(statement) }
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Runs `body` with a connection of its own; the connection goes back
    /// afterwards (or is dropped if it broke). With `retryingDeadConnection`
    /// (a read: it changes nothing), a connection found dead is replaced
    /// once and `body` runs again.
    func withConnection<T>(schema: String, retryingDeadConnection: Bool = false,
                           _ body: (PGConnection) async throws -> T) async throws -> T {
        try await onConnection(schema: schema, body, mayRunAgain: { retryingDeadConnection })
    }

    /// Runs `body` inside `BEGIN … COMMIT` (`ROLLBACK` when it throws). The
    /// `BEGIN` goes out with the body's first statement; the body may
    /// commit itself with its last (`query(…, thenCommit: true)`), else
    /// `COMMIT` follows it. A connection found dead on the first round trip
    /// (nothing done yet: the database restarted since it was last used)
    /// is replaced once, and the body runs again. The commit's success is
    /// what acknowledges a write.
    func transaction<T>(schema: String, _ body: (PGConnection) async throws -> T) async throws -> T {
        var firstTripFailed = false
        return try await onConnection(schema: schema, { connection in
            // Pinned to read committed (`PGConnection.begin`): a role's
            // default of repeatable read would make every contended write
            // fail with a serialization error.
            connection.deferBegin()
            let roundTrips = connection.roundTrips
            do {
                let value = try await body(connection)
                if !connection.dropDeferredBegin() && connection.inTransaction {
                    _ = try await connection.query("COMMIT", silence: connection.commitSilence)
                }
                return value
            } catch {
                let unused = connection.dropDeferredBegin()
                firstTripFailed = connection.roundTrips == roundTrips + 1 && !connection.commitSent
                if !unused && !connection.isBroken && connection.inTransaction { _ = try? await connection.query("ROLLBACK") }
                throw error
            }
        }, mayRunAgain: { firstTripFailed })
    }

    /// Takes a connection, points it at `schema` and runs `body` on it,
    /// then gives it back (dropped if it broke). A connection found dead
    /// (the database restarted since it was last used) is replaced once,
    /// and `body` runs again, when that changes nothing: when pointing it at
    /// the schema failed, or `mayRunAgain` says so of `body`'s failure. Not
    /// after silence, nor after waiting for a connection in vain: the
    /// database may be unreachable, and a second wait would double the
    /// client's.
    private func onConnection<T>(schema: String, _ body: (PGConnection) async throws -> T,
                                 mayRunAgain: () -> Bool) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            let connection = try await acquire()
            var pointed = false
            do {
                // Before any `BEGIN`: a rollback would undo it.
                try await connection.use(schema: schema)
                pointed = true
                let value = try await body(connection)
                release(connection)
                return value
            } catch {
                release(connection)
                if attempt == 1, let pgError = error as? PGError, pgError.isUnavailable, !connection.wentSilent,
                   !pointed || mayRunAgain() { continue }
                throw Self.mapped(error)
            }
        }
    }

    /// A read: `withConnection`, once more on a fresh connection if the first was found dead.
    func read<T>(schema: String, _ body: (PGConnection) async throws -> T) async throws -> T {
        try await withConnection(schema: schema, retryingDeadConnection: true, body)
    }

    /// The store's error for a database failure: unavailability is
    /// `backendUnavailable` (503); other errors pass through.
    static func mapped(_ error: Error) -> Error {
        if let pg = error as? PGError, pg.isUnavailable { return StoreError.backendUnavailable(pg.description) }
        // A deadlock or serialization failure the database broke: worth a retry (503 busy).
        if case .server(let state, _)? = error as? PGError, state == "40P01" || state == "40001" {
            return StoreError.contention(key: "the database")
        }
        return error
    }

    // MARK: - Checkout

    func acquire() async throws -> PGConnection {
        enum Next { case use(PGConnection), connect, wait, fail(String) }
        let now = Clock.nowNanos()
        let next: Next = state.withLock { s in
            if s.closed { return .fail("the store is closed") }
            while let c = s.idle.popLast() {
                if !c.isBroken { return .use(c) }
                s.open -= 1
            }
            if s.open < maxConnections {
                if let reason = s.downReason, now < s.nextAttemptNanos { return .fail(reason) }
                s.open += 1
                return .connect
            }
            return .wait
        }
        switch next {
        case .use(let c): return c
        case .fail(let reason): throw StoreError.backendUnavailable(reason)
        case .connect: return try await openConnection()
        case .wait: return try await waitForRelease()
        }
    }

    /// Opens a connection for a slot already counted in `open`.
    private func openConnection() async throws -> PGConnection {
        do {
            let connection = try await connectDedicated()
            let recovered = state.withLock { s -> Bool in
                let was = s.downReason != nil
                s.downReason = nil
                s.backoffNanos = 0
                return was
            }
            if recovered { logger.notice("postgres: connected again") }
            return connection
        } catch {
            let reason = (error as? PGError)?.description ?? "\(error)"
            let (waiters, first) = state.withLock { s -> ([Waiter], Bool) in
                s.open -= 1
                let first = s.downReason == nil
                s.downReason = reason
                s.backoffNanos = min(max(s.backoffNanos * 2, 100_000_000), 5_000_000_000)
                s.nextAttemptNanos = Clock.nowNanos() + s.backoffNanos
                // Nobody is coming back with a connection for those waiting
                // when none is open: they fail too, rather than hang.
                guard s.open == 0 else { return ([], first) }
                let w = s.waiters
                s.waiters = []
                return (w, first)
            }
            if first { logger.error("postgres: cannot connect: \(reason)") }
            for w in waiters { w.continuation.resume(throwing: StoreError.backendUnavailable(reason)) }
            throw StoreError.backendUnavailable(reason)
        }
    }

    private func waitForRelease() async throws -> PGConnection {
        let id = state.withLock { s -> UInt64 in s.nextWaiterID += 1; return s.nextWaiterID }
        let timeout = acquireTimeout
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PGConnection, Error>) in
            state.withLock { $0.waiters.append(Waiter(id: id, continuation: continuation)) }
            PostgresExecutor.queue.asyncAfter(deadline: .now() + timeout) { [weak self] in
                guard let self else { return }
                let expired = self.state.withLock { s -> Waiter? in
                    guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return s.waiters.remove(at: i)
                }
                expired?.continuation.resume(throwing: StoreError.backendUnavailable(
                    "no database connection came free within \(Int(timeout)) s (all \(self.maxConnections) busy)"))
            }
        }
    }

    /// Gives a connection back: to the first waiter, or to the idle list.
    /// A broken one is dropped, and a waiter gets a new connection in its
    /// place.
    func release(_ connection: PGConnection) {
        let isBroken = connection.isBroken
        enum Next { case none, hand(Waiter), reconnect(Waiter), close }
        let next: Next = state.withLock { s in
            if s.closed {
                s.open -= 1
                return .close
            }
            if isBroken {
                s.open -= 1
                guard !s.waiters.isEmpty else { return .none }
                s.open += 1
                return .reconnect(s.waiters.removeFirst())
            }
            if !s.waiters.isEmpty { return .hand(s.waiters.removeFirst()) }
            s.idle.append(connection)
            return .none
        }
        switch next {
        case .none: if isBroken { connection.close() }
        case .close: connection.close()
        case .hand(let w): w.continuation.resume(returning: connection)
        case .reconnect(let w):
            connection.close()
            executor.run { [self] in
                do { w.continuation.resume(returning: try await self.openConnection()) }
                catch { w.continuation.resume(throwing: error) }
            }
        }
    }

    func close() {
        let (idle, waiters) = state.withLock { s -> ([PGConnection], [Waiter]) in
            s.closed = true
            let i = s.idle, w = s.waiters
            s.open -= i.count
            s.idle = []
            s.waiters = []
            return (i, w)
        }
        idle.forEach { $0.close() }
        waiters.forEach { $0.continuation.resume(throwing: StoreError.backendUnavailable("the store is closed")) }
    }
}
