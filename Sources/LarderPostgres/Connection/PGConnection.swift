import CLibPQ
import Dispatch
import FoundationEssentials
import LarderSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One libpq connection driven asynchronously: queries go out with
/// `PQsendQueryParams`, and `PGEventLoop` tells when the socket is
/// readable (`PQconsumeInput`) or, while output waits, writable
/// (`PQflush`). A query in flight holds a continuation, not a thread.
///
/// Every mutable field is confined to the loop's thread (`loop`), where
/// the store's tasks run too: a task's query starts right there, and its
/// answer resumes it there. One query (or pipeline) at a time: the pool
/// hands a connection to one user until it is released.
///
/// Statements that need no answer in between go out together, as a libpq
/// pipeline (`pipeline`), one round trip for all: the `BEGIN` a transaction
/// defers (`deferBegin`) rides with its first statement, a `COMMIT` with
/// its last (`query(…, thenCommit:)`): a round trip is a packet each way
/// and a wake-up of the loop, so that halves the cost of a write.
final class PGConnection: PGSocketHandler, @unchecked Sendable {
    /// The pool's loop: the connection's state is touched on its thread only.
    let loop: PGEventLoop
    var pg: OpaquePointer?
    /// The socket while the loop watches it.
    var registered: Int32?
    var writeActive = false
    var command: Command?
    var brokenReason: String?
    /// Broken because the database went silent (a timeout, not a closed
    /// connection): it may be unreachable, so trying again at once would
    /// only double the wait. Set once, on the loop.
    private var wentSilentState = false
    /// Told of every `NOTIFY` on a channel this connection listens to.
    var notificationHandler: (@Sendable (_ channel: String, _ payload: String) -> Void)?
    /// Told once when the connection breaks (server gone, socket error).
    private var breakHandler: (@Sendable (String) -> Void)?
    /// Longest a query may go without receiving a byte before the
    /// connection is given up (a database that stopped answering without
    /// closing); 0: no limit.
    let commandTimeout: Double
    /// When the statement in flight will have gone silent too long
    /// (`PGSilenceWatch`); 0 while none is. Set on the loop.
    private let deadline: PGSilenceWatch.Deadline

    /// A statement of a pipeline.
    struct Statement: Sendable {
        let sql: String
        var parameters: [PGValue] = []
    }

    final class Command {
        let continuation: CheckedContinuation<[PGResult], Error>
        let onRow: (@Sendable (PGRow) throws -> Void)?
        let steps: [Statement]
        /// One statement: sent alone, prepared first if need be (`preparing`).
        /// Several: sent as one pipeline, whose answers fill `slots` in turn.
        var pipelined: Bool { steps.count > 1 }
        /// The prepared statement's name, while it is being prepared.
        var preparing: String?
        /// A pipeline's answers in the order they come: the index of the
        /// step each belongs to, or -(index + 1) for that step's `Prepare`;
        /// `slot` is the next.
        var slots: [Int] = []
        var slot = 0
        /// Names given to statements this pipeline prepares; each is kept
        /// once its `Prepare` succeeds (the server keeps it even if a later
        /// step fails: a prepared statement outlives a rollback).
        var preparedHere: [String: String] = [:]
        var results: [PGResult]
        var error: Error?
        /// Seconds without a byte before the connection is given up.
        var silence: Double = 0
        /// The allowance of a pipeline's closing `COMMIT`, from when every
        /// step before it has answered (a flush request after them makes
        /// the server send those answers at once); nil: `silence` throughout.
        var commitSilence: Double?
        init(continuation: CheckedContinuation<[PGResult], Error>, onRow: (@Sendable (PGRow) throws -> Void)?,
             steps: [Statement]) {
            self.continuation = continuation
            self.onRow = onRow
            self.steps = steps
            self.results = Array(repeating: PGResult(), count: steps.count)
        }
    }
    /// Whether the transaction's `BEGIN` waits to go out with the next
    /// statement (`deferBegin`). Touched only by the connection's one user.
    private var beginDeferred = false
    /// Round trips made (`pipeline` calls), and whether one carried a
    /// `COMMIT`: a transaction whose first round trip found the connection
    /// dead, with no commit in it, changed nothing and may run again.
    /// Touched only by the connection's one user.
    private(set) var roundTrips = 0
    private(set) var commitSent = false
    /// Whether the last statement left the connection inside a transaction
    /// (libpq's `PQtransactionStatus`). On the loop.
    var inTransactionState = false
    /// Statements prepared on this connection, by text: each is parsed and
    /// planned once per connection, not once per request.
    var prepared: [String: String] = [:]
    /// Names statements `s0`, `s1`, … never twice on a connection, even
    /// when a `Prepare` whose pipeline failed is not recorded.
    private var statementsNamed = 0

    func nextStatementName() -> String {
        defer { statementsNamed += 1 }
        return "s\(statementsNamed)"
    }
    /// The schema the connection's `search_path` names, as `use(schema:)`
    /// last set it; nil: not set yet. Touched only by the connection's one
    /// user at a time (the pool's checkout, or the listener's turn), never
    /// concurrently, so it needs no guard.
    private var searchPath: String?

    init(pg: OpaquePointer, commandTimeout: Double, loop: PGEventLoop) {
        self.pg = pg
        self.loop = loop
        self.commandTimeout = commandTimeout
        let loop = self.loop
        let expired = Locked<(@Sendable () -> Void)?>(nil)
        deadline = PGSilenceWatch.Deadline { loop.execute { expired.withLock { $0 }?() } }
        expired.withLock { $0 = { [weak self] in self?.silenceExpired() } }
        PGSilenceWatch.shared.watch(deadline)
    }

    /// On the loop: the watch saw the deadline pass; it may have moved since.
    private func silenceExpired() {
        var at = deadline.nanos.load(ordering: .relaxed)
        guard command != nil, at != 0, at < Clock.monotonicNanos() else { return }
        // The loop may have been busy past the deadline with the answer
        // already in the socket: read it before calling the database silent.
        if let registered {
            var ready = pollfd(fd: registered, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 0) > 0 { readable() }
        }
        at = deadline.nanos.load(ordering: .relaxed)
        guard let command, at != 0, at < Clock.monotonicNanos() else { return }
        wentSilentState = true
        fail("the database sent nothing for \(command.silence) s")
    }

    /// On the loop: the statement in flight may stay silent `seconds` from now.
    func setDeadline(_ seconds: Double) {
        // At most a day: a larger allowance is no limit in practice, and Int64 must not trap.
        deadline.nanos.store(seconds > 0 ? Clock.monotonicNanos() + Int64(min(seconds, 86_400) * 1e9) : 0, ordering: .relaxed)
    }

    /// Orders the connection's making (on the connecting thread) before its
    /// first use (on the task's), in a way ThreadSanitizer sees: the
    /// continuation's own hand-off happens inside the concurrency runtime,
    /// which it does not instrument, and it once reported the first
    /// query's read of a field written by `init` as a race.
    static let handOff = Lock()

    deinit {
        // The pool closes connections before dropping them; this is the
        // backstop for one dropped by an error path.
        // (Registered, the loop would still hold it: it is not, so the socket is not watched.)
        if let pg { PQfinish(pg) }
        PGSilenceWatch.shared.unwatch(deadline)
    }

    /// Whether it broke, readable anywhere without a round through the
    /// loop (the pool asks under its own lock, which the loop's jobs take).
    var isBroken: Bool { brokenFlag.load(ordering: .acquiring) }
    private let brokenFlag = Atomic<Bool>(false)

    /// Whether the connection broke because the database sent nothing for
    /// the statement's allowance (rather than closing it).
    var wentSilent: Bool { loop.sync { self.wentSilentState } }

    func onNotification(_ handler: @escaping @Sendable (_ channel: String, _ payload: String) -> Void) {
        loop.sync { self.notificationHandler = handler }
    }

    func onBreak(_ handler: @escaping @Sendable (String) -> Void) {
        loop.sync {
            if let reason = self.brokenReason { handler(reason) } else { self.breakHandler = handler }
        }
    }

    /// Runs one statement (parameters `$1…`) and returns its rows, all in
    /// memory. With `onRow`, rows are handed over one at a time as they
    /// arrive (libpq's single-row mode) and none are kept: for results too
    /// large to hold. A database error throws `PGError.server`; a broken
    /// connection `PGError.connection`.
    /// `silence` replaces `commandTimeout` for this statement (a `COMMIT`,
    /// whose flush may legitimately take long).
    /// `thenCommit`: a `COMMIT` goes out with the statement (a failed
    /// statement leaves it unrun, and the transaction open for `ROLLBACK`).
    func query(_ sql: String, _ parameters: [PGValue] = [], silence: Double? = nil, thenCommit: Bool = false,
               onRow: (@Sendable (PGRow) throws -> Void)? = nil) async throws -> PGResult {
        var steps = [Statement(sql: sql, parameters: parameters)]
        if thenCommit { steps.append(Statement(sql: "COMMIT")) }
        let silence = thenCommit ? max(silence ?? commandTimeout, commitSilence) : silence
        return try await pipeline(steps, silence: silence, onRow: onRow)[0]
    }

    /// A flush may take long under load, and a commit given up on is an
    /// unknown outcome: six times the statement's allowance (a minute by default).
    var commitSilence: Double { commandTimeout * 6 }
    static let begin = "BEGIN ISOLATION LEVEL READ COMMITTED"

    /// Runs the statements in order in one round trip; returns each one's
    /// rows. The first failure fails the call; the statements after it do
    /// not run. A deferred `BEGIN` goes first.
    /// With `commitSilence`, a closing `COMMIT` gets that allowance
    /// instead, once the statements before it have answered: a write can
    /// wait long for its flush, but not for a lock or a database gone silent.
    func pipeline(_ statements: [Statement], silence: Double? = nil, commitSilence: Double? = nil,
                  onRow: (@Sendable (PGRow) throws -> Void)? = nil) async throws -> [PGResult] {
        var steps = statements
        roundTrips += 1
        let commits = steps.contains(where: { $0.sql == "COMMIT" })
        let began = beginDeferred
        if began {
            beginDeferred = false
            steps.insert(Statement(sql: Self.begin), at: 0)
        }
        precondition(onRow == nil || steps.count == 1, "rows one at a time only for a statement alone")
        // A `COMMIT` counts as sent unless the connection was known
        // broken before anything went out (then the transaction changed
        // nothing, and `PGPool.transaction` may run it again).
        var sent = false
        defer { if commits && sent { commitSent = true } }
        let results = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[PGResult], Error>) in
            // On the loop already (a task's query): sent right here.
            loop.sync {
                let command = Command(continuation: continuation, onRow: onRow, steps: steps)
                command.silence = silence ?? self.commandTimeout
                if commits && statements.last?.sql == "COMMIT" { command.commitSilence = commitSilence }
                sent = self.brokenReason == nil
                self.start(command)
            }
        }
        return began ? Array(results.dropFirst()) : results
    }

    /// Makes the next statement begin a transaction (read committed), in
    /// its round trip.
    func deferBegin() {
        beginDeferred = true
        commitSent = false
    }

    /// Drops a deferred `BEGIN` that nothing used; returns whether there was one.
    func dropDeferredBegin() -> Bool {
        defer { beginDeferred = false }
        return beginDeferred
    }

    /// Whether the connection is inside a transaction (begun and not yet
    /// committed or rolled back), as of the last statement's answer.
    var inTransaction: Bool { loop.sync { self.inTransactionState } }

    /// Points unqualified table names at `schema`'s tables (`SET
    /// search_path`), unless they already are: the stores of a database's
    /// namespaces share connections, one schema each. Never inside a
    /// transaction (a rollback would undo the `SET` but not this record of
    /// it). Statements prepared under another schema are planned again by
    /// the database on their next use, which it does when `search_path`
    /// changes.
    func use(schema: String) async throws {
        guard searchPath != schema else { return }
        searchPath = nil
        _ = try await query("SET search_path TO \"\(schema)\"")
        searchPath = schema
    }

    /// Closes the connection (any query in flight fails).
    func close() {
        loop.execute { self.fail("closed") }
    }

    // MARK: - On the loop

    /// Marks the connection broken, fails the query in flight, stops
    /// watching the socket and closes it.
    func fail(_ reason: String) {
        guard brokenReason == nil else { return }
        brokenReason = reason
        brokenFlag.store(true, ordering: .releasing)
        if let command {
            self.command = nil
            setDeadline(0)
            command.continuation.resume(throwing: PGError.connection(reason))
        }
        breakHandler?(reason)
        breakHandler = nil
        notificationHandler = nil
        if let registered {
            loop.unregister(registered)
            self.registered = nil
        }
        if let pg {
            PQfinish(pg)
            self.pg = nil
        }
    }
}
