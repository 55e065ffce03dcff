import Dispatch
import FoundationEssentials
import LarderModel
import LarderStorage
import LarderValueFile
import LarderSupport

/// Brings every committed change, from any server on the database, to this
/// server's observer, in version order.
///
/// The database's listening connection (`PGListener`, shared by the
/// stores of every schema) `LISTEN`s on the store's channel; each server
/// `NOTIFY`s it after its writes commit (`announce`), with its own name as
/// the payload, which its own feed ignores. A notification
/// only says "there is something new": the feed then reads
/// `larder_changes` after the last version it delivered, up to the mark
/// below which no transaction runs (see `WriteLocks`), so that read never
/// skips a version a slower transaction commits later. While changes wait
/// above the mark (a transaction that rolled back sends no notification
/// when it ends), it reads again after a short wait. A notification lost
/// while the listener reconnects costs nothing: it reads again on
/// reconnecting. On start it hands the observer
/// the last `history` changes, so `Last-Event-ID` replay reaches back past
/// this server's start.
final class PostgresChangeFeed: @unchecked Sendable {
    private let pool: SchemaPool
    private let listener: PGListener
    private let channel: String
    private let history: Int
    /// `WriteLocks.versionBase`: turns the oldest running transaction's id into a version.
    private let versionBase: Int64
    private let observer: StoreChangeObserver?
    /// Told of every change delivered, and of whether the feed is current.
    private let readCache: PostgresReadCache?
    private let logger: Logger
    /// This feed's name in the notifications it sends.
    private let name = UUID().uuidString
    /// Called when a server moved the namespace's clock (a `NOTIFY` with
    /// `clockPayload`), and on every (re)connection of the listener, which
    /// may have missed one (`PostgresStore+Clock`).
    private let clockNotice = Locked<(@Sendable () -> Void)?>(nil)
    static let clockPayload = "clock"

    /// Guarded by `state`.
    private struct State {
        var lastVersion: Int64 = 0
        var stopped = false
        /// Reads in a row that found changes waiting above the mark: the
        /// next read is due after a wait that doubles with each (from 2 ms
        /// to 256 ms), as a long transaction holds the mark.
        var heldBack = 0
        var stats = StoreStats()
        /// `trim` deleted changes past `lastVersion` before the feed read
        /// them: the next change delivered is marked as following a gap.
        var gap = false
        /// The `trimmed_through` a gap was last marked for: a row that
        /// committed late below it is delivered without a second reset.
        var gapMarkedFor: Int64 = 0
        /// Writers of this server waiting for their change to be delivered,
        /// each until its deadline (monotonic nanoseconds).
        var waiters: [(version: Int64, deadline: Int64, continuation: CheckedContinuation<Void, Never>)] = []
        /// Whether the one timer that lets waiters past their deadline go
        /// is set (`giveUpDueWaiters`); a timer per write was a tenth of
        /// Dispatch's own time in a write.
        var giveUpTimerSet = false
        /// A `NOTIFY` is due: the next read carries it (`announce`).
        var announcementDue = false
        /// Reads started so far: a held-back read's timer asks for no
        /// read when another one has started since (`readAgainLater`).
        var readsStarted = 0
    }
    private let state = Locked(State())
    private let reads: CoalescingRun
    /// At most one `NOTIFY` per 5 ms: under a steady stream of writes,
    /// each tells the other servers of several commits (they then read them
    /// all at once), for at most 5 ms more before they hear of a change.
    private let announcements: CoalescingRun

    init(pool: SchemaPool, listener: PGListener, channel: String, versionBase: Int64, history: Int,
         observer: StoreChangeObserver?, readCache: PostgresReadCache? = nil, logger: Logger) {
        self.pool = pool
        reads = CoalescingRun(on: pool.executor)
        announcements = CoalescingRun(spacing: 0.005, on: pool.executor)
        self.versionBase = versionBase
        self.listener = listener
        self.channel = channel
        self.history = max(1, history)
        self.observer = observer
        self.readCache = readCache
        self.logger = logger
    }

    var stats: StoreStats { state.withLock { $0.stats } }
    /// Why the listener is not connected, while it is not.
    var brokenReason: String? { listener.brokenReason }

    /// Loads the recent changes (blocking, before any client can
    /// subscribe), then starts listening.
    func start() throws {
        let history = self.history
        // The newest final version first, then the history up to it: a
        // change committing in between is read by the first feed read, not lost.
        let last = try pool.executor.blockingReply {
            try await self.pool.read { db in
                try await db.query("""
                    SELECT coalesce(max(version), 0)::int8 FROM larder_changes WHERE version < \(self.markSQL)
                    """).first!.int(0)!
            }
        }.get()
        let recent = try pool.executor.blockingReply {
            try await self.pool.read { db in
                try await db.query("""
                    SELECT version, kind, key, prefix, deleted, size, removed FROM
                      (SELECT * FROM larder_changes WHERE version <= $2 ORDER BY version DESC LIMIT $1) recent ORDER BY version
                    """, [.int(Int64(history)), .int(last)]).rows
            }
        }.get()
        for row in recent { observer?.storeDidChange(Self.change(row)) }
        state.withLock { $0.lastVersion = last }
        // The first read (on connecting) also fills the totals.
        listen()
    }

    func stop() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.stopped = true
            defer { s.waiters = [] }
            return s.waiters.map(\.continuation)
        }
        reads.stop()
        announcements.stop()
        listener.unsubscribe(channel)
        waiters.forEach { $0.resume() }
    }

    /// Subscribes to the channel: a notification, and every (re)connection
    /// of the listener, makes the feed read what is new.
    private func listen() {
        listener.subscribe(channel, PGListener.Subscriber(
            notified: { [weak self] payload in
                guard let self, payload != self.name else { return }
                if payload == Self.clockPayload {
                    self.clockNotice.withLock { $0 }?()
                    return
                }
                self.readChanges()
            },
            connected: { [weak self] in
                self?.readChanges()
                self?.clockNotice.withLock { $0 }?()
            }))
    }

    /// `notice` runs when the namespace's clock may have moved on another server.
    func onClockNotice(_ notice: @escaping @Sendable () -> Void) {
        clockNotice.withLock { $0 = notice }
    }

    /// Tells every server (this one too) that the clock moved, in `db`'s transaction.
    func announceClock(_ db: PGConnection) async throws {
        _ = try await db.query("SELECT pg_notify($1, $2)", [.text(channel), .text(Self.clockPayload)])
    }

    /// A write of this server committed: tells the other servers, and
    /// returns once this one's observer has the change.
    func committed(_ version: Int64) async {
        announce()
        await delivered(through: version)
    }

    /// Tells the other servers that something committed, at most once
    /// per 5 ms (commits meanwhile share the next): the `NOTIFY` rides
    /// with the next feed read, in its round trip and after it (a write
    /// of this server always asks for one, `delivered`), rather than in a
    /// transaction of its own. It commits with `synchronous_commit` off: a
    /// notification is not data, and a lost one is made up by the next
    /// read (every sweep reads).
    func announce() {
        announcements.request { [self] in
            state.withLock { $0.announcementDue = true }
            readChanges()
        }
    }

    static let notifySQL = "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)"

    /// Returns once the change of `version` (a write of this server that
    /// committed) has been handed to the observer, so that when the write
    /// is acknowledged this server's watchers and event streams have it, as
    /// with the disk store. It reads at once rather than wait for the
    /// NOTIFY. Gives up after `timeout` seconds (the listener may be
    /// reconnecting): the change is still delivered, later.
    func delivered(through version: Int64, timeout: Double = 2) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let deadline = Clock.monotonicNanos() + Int64(timeout * 1e9)
            let (done, setTimer) = state.withLock { s -> (Bool, Bool) in
                if s.lastVersion >= version || s.stopped { return (true, false) }
                s.waiters.append((version, deadline, continuation))
                defer { s.giveUpTimerSet = true }
                return (false, !s.giveUpTimerSet)
            }
            if done { return continuation.resume() }
            readChanges()
            if setTimer { setGiveUpTimer(for: deadline) }
        }
    }

    private func setGiveUpTimer(for deadline: Int64) {
        let delay = max(0, deadline - Clock.monotonicNanos())
        PostgresExecutor.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [weak self] in
            self?.giveUpDueWaiters()
        }
    }

    /// Lets the writers whose deadline has passed go on, and sets the timer
    /// again for the next deadline, if any writer still waits.
    private func giveUpDueWaiters() {
        let now = Clock.monotonicNanos()
        let (due, next) = state.withLock { s -> ([CheckedContinuation<Void, Never>], Int64?) in
            let due = s.waiters.filter { $0.deadline <= now }.map(\.continuation)
            s.waiters.removeAll { $0.deadline <= now }
            let next = s.waiters.map(\.deadline).min()
            s.giveUpTimerSet = next != nil
            return (due, next)
        }
        due.forEach { $0.resume() }
        if let next { setGiveUpTimer(for: next) }
    }

    /// Lets the writers waiting for versions up to `version` go on.
    private func resumeWaiters(through version: Int64) {
        let due = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            let due = s.waiters.filter { $0.version <= version }
            s.waiters.removeAll { $0.version <= version }
            return due.map(\.continuation)
        }
        due.forEach { $0.resume() }
    }

    /// Reads and delivers what is new; one read at a time (a notification
    /// during a read makes it read once more).
    func readChanges() {
        reads.request { [self] in
            do {
                try await deliverNew()
            } catch {
                logger.debug("postgres: reading changes failed: \(error)")
                readCache?.feedFailed()
                // Changes may wait: read again, backing off as while held back.
                readAgainLater(heldBack: true)
            }
        }
    }

    /// Runs a read of the feed on the listening connection (idle but for
    /// notifications, and lent to one read at a time), so that writers
    /// waiting for their change (`delivered`) never compete with it for the
    /// pool; on the pool while the listener reconnects.
    private func onFeedConnection<T>(_ body: (PGConnection) async throws -> T) async throws -> T {
        if let value = try await listener.withConnection(schema: pool.schema, body) { return value }
        return try await pool.read(body)
    }

    /// SQL for the mark: every version below it is final.
    private var markSQL: String {
        "(\(versionBase) + pg_snapshot_xmin(pg_current_snapshot())::text::int8 * \(WriteLocks.versionsPerTransaction))"
    }

    private func deliverNew() async throws {
        while true {
            let (after, notify) = state.withLock { s -> (Int64, Bool) in
                s.readsStarted += 1
                defer { s.announcementDue = false }
                return (s.lastVersion, s.announcementDue)
            }
            // The read's snapshot is no older than this.
            let began = Clock.monotonicNanos()
            // Shaped for the plan a prepared statement keeps (generic, its
            // parameter unknown): the mark a value the index scans are
            // bounded by, and `min` for what waits above it, which reads
            // one index entry; a join with the mark, or a count, had the
            // planner scan and sort the whole table (0.7 ms a read, most of
            // the database's time on a write load).
            // One statement, one snapshot: the mark and the rows below it,
            // then a last row with the totals, whether any committed
            // change waits above the mark, and the newest version a trim
            // deleted (past the last delivered: changes were lost).
            let read = PGConnection.Statement(sql: """
                    WITH mark AS (SELECT \(markSQL) AS below), totals AS (\(WriteLocks.readTotals))
                    (SELECT version, kind, key, prefix, deleted, size, removed, NULL::int8, NULL::int8, NULL::int8, NULL::int8, NULL::int8
                     FROM larder_changes WHERE version > $1 AND version < (SELECT below FROM mark) ORDER BY version LIMIT 1000)
                    UNION ALL
                    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, totals.*,
                      (SELECT min(version) FROM larder_changes WHERE version >= mark.below),
                      (SELECT trimmed_through FROM larder_state)
                    FROM mark, totals
                    """, parameters: [.int(after)])
            let notification = PGConnection.Statement(sql: Self.notifySQL, parameters: [.text(channel), .text(name)])
            let rows: [PGRow]
            do {
                rows = try await onFeedConnection { db in
                    try await db.pipeline(notify ? [read, notification] : [read])[0].rows
                }
            } catch where notify {
                // The notification is dropped, as a failed one always was
                // (every server's sweep reads anyway), and the read goes on
                // without it: a NOTIFY the database refuses (its queue
                // full) must not stop this server's own feed.
                logger.debug("postgres: notifying the other servers failed: \(error)")
                continue
            }
            // The totals row is the last; it says first whether a gap precedes the rows.
            guard let totals = rows.last, totals.int(0) == nil else { throw PGError.server(state: "XX000", message: "the change feed's read had no totals row") }
            let stats = StoreStats(keys: Int(totals.int(7) ?? 0), logicalBytes: totals.int(8) ?? 0, storedBytes: totals.int(9) ?? 0)
            let heldBack = totals.int(10) != nil
            let trimmedThrough = totals.int(11) ?? 0
            let newGap = state.withLock { s -> Bool in
                s.stats = stats
                guard trimmedThrough > after, trimmedThrough > s.gapMarkedFor else { return false }
                s.gapMarkedFor = trimmedThrough
                s.gap = true
                return true
            }
            if newGap {
                logger.warning("postgres: the change feed fell more than --event-history changes behind; event streams get a reset")
                readCache?.invalidateAll()
            }
            var delivered = 0
            for row in rows.dropLast() {
                guard let version = row.int(0) else { continue }
                var change = Self.change(row)
                change.followsGap = state.withLock { s in defer { s.gap = false }; return s.gap }
                readCache?.apply(change)
                observer?.storeDidChange(change)
                state.withLock { $0.lastVersion = version }
                resumeWaiters(through: version)
                delivered += 1
            }
            if delivered == 1000 { continue }
            readCache?.feedRead(began: began, clean: !heldBack)
            readAgainLater(heldBack: heldBack)
            return
        }
    }

    /// When changes wait above the mark, asks for another read after a
    /// wait, unless one starts meanwhile (a write's, a notification's: it
    /// sets its own wait if still held back); otherwise resets the wait.
    private func readAgainLater(heldBack: Bool) {
        let (wait, reads, started) = state.withLock { s -> (Int?, Int, Int) in
            guard heldBack, !s.stopped else { s.heldBack = 0; return (nil, 0, 0) }
            defer { s.heldBack += 1 }
            return (2 << min(s.heldBack, 7), s.heldBack, s.readsStarted)
        }
        guard let wait else { return }
        // After about 5 s, then every 10 s or so: a transaction open on the
        // database (anyone's) holds every server's feed back meanwhile.
        if reads == 27 || (reads > 27 && (reads - 27) % 40 == 0) {
            logger.warning("postgres: the change feed has waited \(reads > 27 ? "over" : "about") 5 s for a transaction still open on the database (pg_stat_activity.backend_xid, pg_prepared_xacts); changes after it are held back")
        }
        PostgresExecutor.queue.asyncAfter(deadline: .now() + .milliseconds(wait)) { [weak self] in
            guard let self, self.state.withLock({ $0.readsStarted == started }) else { return }
            self.readChanges()
        }
    }

    /// Keeps the last `history` changes (called by the sweep), and
    /// records the newest version deleted: a feed behind it lost changes.
    func trim() async throws {
        let history = Int64(self.history)
        _ = try await pool.withConnection { db in
            try await db.query("""
                WITH gone AS (
                  DELETE FROM larder_changes WHERE version <
                    (SELECT version FROM larder_changes ORDER BY version DESC OFFSET $1 LIMIT 1)
                  RETURNING version)
                UPDATE larder_state SET trimmed_through = greatest(trimmed_through, (SELECT max(version) FROM gone))
                WHERE EXISTS (SELECT 1 FROM gone)
                """, [.int(history - 1)])
        }
    }

    /// A `larder_changes` row (version, kind, key, prefix, deleted, size, removed) as a change.
    static func change(_ row: PGRow) -> StoreChange {
        let version = UInt64(row.int(0) ?? 0)
        let kind = row.string(1) ?? "put"
        if let key = row.string(2) {
            if kind == "put" {
                return .put(ValueMetadata(key: key, contentType: "", size: UInt64(row.int(5) ?? 0), version: version, modifiedNanos: 0))
            }
            return .delete(key, removed: row.int(6).map { UInt64($0) }, version: version, expired: kind == "expire")
        }
        return .deletePrefix(row.string(3) ?? "", deleted: Int(row.int(4) ?? 0), version: version)
    }
}
