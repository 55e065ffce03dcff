/// The versions of a restore's transaction, one per change, as many as it
/// needs: past the 1,024 of its transaction id (`WriteLocks`), each 1,024
/// more come from a subtransaction's id.
///
/// Why that keeps every `WriteLocks` invariant:
/// - A version belongs to an id of this transaction alone: a
///   subtransaction's id comes from the same counter as every top-level
///   id, never reused, so no other writer's range meets these.
/// - Nothing is delivered early: a subtransaction's id is above its
///   parent's, and the change feed's mark (`pg_snapshot_xmin`, the oldest
///   top-level transaction running) stays at or below the parent's id
///   until it ends; the subtransactions (released, not rolled back) commit
///   or roll back with it, in the same instant.
/// - A key's next writer has a larger version: the restore holds the
///   *writes* lock exclusively (`lockAll`) before taking any id, so every
///   key writer takes its id after the restore's commit, above every id
///   the restore took.
struct RestoreVersions {
    private let locks: WriteLocks
    /// The top-level transaction's id (64-bit, `xid8`).
    private let transaction: Int64
    private var next: Int64
    private var end: Int64

    /// Starts from the transaction's first version (`lockAll`'s answer).
    init(first: Int64, locks: WriteLocks) {
        self.locks = locks
        transaction = (first - locks.versionBase) / WriteLocks.versionsPerTransaction
        next = first
        end = first + WriteLocks.versionsPerTransaction
    }

    /// The next version, in increasing order.
    mutating func take(_ db: PGConnection) async throws -> Int64 {
        if next == end { try await reserveMore(db) }
        defer { next += 1 }
        return next
    }

    /// A subtransaction that writes a row gets an id of its own: the
    /// running totals' row of this backend, adjusted by nothing, tells it
    /// as the new row version's `xmin`. (No one waits on that row: every
    /// writer of the totals holds the *writes* lock, which the restore
    /// holds exclusively.) Released at once: its id stays this
    /// transaction's, and later statements run in the parent.
    private mutating func reserveMore(_ db: PGConnection) async throws {
        let answers = try await db.pipeline([
            PGConnection.Statement(sql: "SAVEPOINT larder_restore_versions"),
            PGConnection.Statement(sql: WriteLocks.addToTotals(keys: "0", logical: "0", stored: "0") + " RETURNING xmin::text::int8"),
            PGConnection.Statement(sql: "RELEASE SAVEPOINT larder_restore_versions"),
        ])
        guard let low = answers[1].first?.int(0) else {
            throw PGError.server(state: "XX000", message: "a restore's subtransaction had no id")
        }
        let id = Self.widen(low, near: transaction)
        guard id > transaction else {
            throw PGError.server(state: "XX000", message: "a restore's subtransaction id \(id) is not above its transaction's \(transaction)")
        }
        next = locks.version(ofTransaction: id)
        end = next + WriteLocks.versionsPerTransaction
    }

    /// The 64-bit id whose low 32 bits are `low` (an `xid`, as `xmin`
    /// tells it) at or after `transaction` (an `xid8`): ids issued after it
    /// are less than 2^31 past it, so the difference of the low halves,
    /// modulo 2^32, is the distance, across an epoch's end too.
    static func widen(_ low: Int64, near transaction: Int64) -> Int64 {
        transaction + ((low - (transaction & 0xFFFF_FFFF)) & 0xFFFF_FFFF)
    }
}
