/// How a write transaction takes its locks and its version, so that writes
/// to different keys run (and commit, sharing the database's WAL flushes)
/// side by side, while each key's writes, and the change feed, stay in order.
///
/// - Locks (transaction-scoped advisory locks, released at commit or
///   rollback, after the commit is visible):
///   - a write to one key takes the schema's *writes* lock shared, then the
///     key's own lock (a hash of schema and key: a collision only makes two
///     keys take turns). The key lock exists whether the row does or not,
///     so two create-only writers of one absent key cannot both win;
///   - a write to many keys (a prefix delete, a reset, the expiry sweep)
///     takes the *writes* lock exclusively: it waits for every key write in
///     flight and holds the next ones back until it commits.
/// - The version is the transaction's id (`xid8`, 64-bit, never reused,
///   carried over to a promoted standby), `versionBase + xid × 1024`, plus
///   the change's index for a transaction of many changes (at most 1,024).
///   The id is assigned only once the locks are held, so a key's next
///   writer always has a larger version than the last one.
/// - The change feed delivers versions below the oldest transaction still
///   running (`pg_snapshot_xmin`): every version under that mark is final,
///   committed (visible) or rolled back (never will be). Versions are so
///   delivered in order, with none skipped, on every server; a change
///   committed while an older transaction runs waits for it.
struct WriteLocks {
    /// Versions each transaction may use.
    static let versionsPerTransaction: Int64 = 1024
    /// The `larder_totals` shards; a transaction adds to its backend's.
    static let totalShards = 256

    /// The schema's *writes* lock, as the two `int4` of advisory locks.
    let writesLock: String
    let schema: String
    /// From `larder_state.version_base`, fixed when the schema was migrated.
    let versionBase: Int64

    init(schema: String, versionBase: Int64) {
        self.schema = schema
        self.writesLock = "larder.writes." + schema
        self.versionBase = versionBase
    }

    /// The first version of transaction `xid`.
    func version(ofTransaction xid: Int64) -> Int64 { versionBase + xid * Self.versionsPerTransaction }

    /// Locks `key` for this transaction, then takes its id (the second
    /// statement's answer: `version(of:)`), as statements of their own so
    /// that the id surely comes after the locks. A statement after them in
    /// the same pipeline reads what the key's last writer committed.
    func lockKey(_ key: String) -> [PGConnection.Statement] {
        [PGConnection.Statement(sql: "SELECT pg_advisory_xact_lock_shared(hashtext($1), 0), pg_advisory_xact_lock(hashtextextended($2, 0))",
                                parameters: [.text(writesLock), .text(schema + "/" + key)]),
         Self.takeID]
    }

    /// The key lock alone (`lockKey` without taking the id): for a
    /// statement that takes the id itself (`versionSQL`), after it.
    func lockKeyOnly(_ key: String) -> PGConnection.Statement { lockKey(key)[0] }

    /// SQL for the transaction's first version, assigning its id:
    /// `version(of:)` in the statement that needs it.
    var versionSQL: String { "\(versionBase) + pg_current_xact_id()::text::int8 * \(Self.versionsPerTransaction)" }

    /// The transaction's id (assigning it).
    static let takeID = PGConnection.Statement(sql: "SELECT pg_current_xact_id()::text::int8")

    /// The version `takeID`'s answer gives.
    func version(of taken: PGResult) -> Int64 { version(ofTransaction: taken.first!.int(0)!) }

    /// Takes the writes lock shared and a version, with no key yet (a
    /// generated key is named by the version); `lockNamedKey` follows.
    func lockForNewKey(_ db: PGConnection) async throws -> Int64 {
        let answers = try await db.pipeline([
            PGConnection.Statement(sql: "SELECT pg_advisory_xact_lock_shared(hashtext($1), 0)", parameters: [.text(writesLock)]),
            Self.takeID])
        return version(of: answers[1])
    }

    /// The key lock of a key named after the version was taken.
    func lockNamedKey(_ key: String) -> PGConnection.Statement {
        PGConnection.Statement(sql: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", parameters: [.text(schema + "/" + key)])
    }

    /// Locks every key of the schema for this transaction; returns its first version.
    func lockAll(_ db: PGConnection) async throws -> Int64 {
        let answers = try await db.pipeline([
            PGConnection.Statement(sql: "SELECT pg_advisory_xact_lock(hashtext($1), 0)", parameters: [.text(writesLock)]),
            Self.takeID])
        return version(of: answers[1])
    }

    /// A version no write will use (for generated ids): a transaction of its own.
    func takeVersion(_ db: PGConnection) async throws -> Int64 {
        version(ofTransaction: try await db.query("SELECT pg_current_xact_id()::text::int8").first!.int(0)!)
    }

    /// SQL adding `$keys, $logical, $stored` (the placeholders given) to the
    /// running totals, as a data-modifying `WITH` item or a statement.
    static func addToTotals(keys: String, logical: String, stored: String) -> String {
        """
        INSERT INTO larder_totals VALUES (pg_backend_pid() % \(totalShards), \(keys), \(logical), \(stored))
          ON CONFLICT (shard) DO UPDATE SET keys = larder_totals.keys + EXCLUDED.keys,
            logical_bytes = larder_totals.logical_bytes + EXCLUDED.logical_bytes,
            stored_bytes = larder_totals.stored_bytes + EXCLUDED.stored_bytes
        """
    }

    /// SQL reading the totals: `keys, logical_bytes, stored_bytes`.
    static let readTotals = """
        SELECT coalesce(sum(keys), 0)::int8, coalesce(sum(logical_bytes), 0)::int8, coalesce(sum(stored_bytes), 0)::int8
        FROM larder_totals
        """
}
