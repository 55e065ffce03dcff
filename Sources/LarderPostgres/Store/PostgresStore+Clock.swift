import LarderStorage
import LarderStoreVocabulary
import LarderSupport

/// The namespace's clock on PostgreSQL: its state lives in `larder_state`
/// (`clock_offset`, `clock_frozen_at`), so every server on the database
/// reads the same namespace time. Each server keeps a copy in its
/// `StoreClock` (reads stay local: a load and a branch until it moves);
/// a move is made in a transaction that locks the row, then announced on
/// the store's channel, and every server re-reads the row when told (and
/// when its listener reconnects, having perhaps missed it).
extension PostgresStore {
    static let clockColumns = "clock_offset, clock_frozen_at"

    /// The clock's state in `row`'s columns `column` and `column + 1`.
    static func clockState(_ row: PGRow, from column: Int) -> StoreClock.State {
        StoreClock.State(offsetNanos: row.int(column) ?? 0, frozenAtNanos: row.int(column + 1))
    }

    /// Moves the namespace's clock in the database, adopts it here, then
    /// sweeps until nothing is due by its new time (a batch at a time, each
    /// its own transaction, so writers wait one batch at most), answering
    /// after: what it passed is gone, with its `expire` changes.
    package func moveClock(_ move: StoreClock.Move) -> StoreReply<StoreClock.Reading> {
        pool.executor.reply { [self] in
            let state = try await pool.transaction { db -> StoreClock.State in
                let row = try await db.query("SELECT \(Self.clockColumns) FROM larder_state FOR UPDATE").first!
                let next = try Self.clockState(row, from: 0).applying(move, system: Clock.nowNanos())
                _ = try await db.query("UPDATE larder_state SET clock_offset = $1, clock_frozen_at = $2",
                                       [.int(next.offsetNanos), next.frozenAtNanos.map { .int($0) } ?? .null])
                try await changes.announceClock(db)
                return next
            }
            clock.adopt(state)
            while try await sweep(now: clock.nowNanos()) {}
            return clock.reading
        }
    }

    /// Re-reads the clock's state (another server may have moved it).
    func refreshClock() {
        pool.executor.run { [self] in
            do {
                let row = try await pool.read { db in try await db.query("SELECT \(Self.clockColumns) FROM larder_state").first }
                if let row { clock.adopt(Self.clockState(row, from: 0)) }
            } catch {
                logger.debug("postgres: cannot read the clock: \(error)")
            }
        }
    }
}
