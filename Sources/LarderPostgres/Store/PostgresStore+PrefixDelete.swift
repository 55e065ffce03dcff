import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// Deleting every key under a prefix: `deletePrefix`, and a restore with
/// `replace` (`commitRestore`), which removes the same rows the same way
/// inside its own transaction.
extension PostgresStore {
    package func deletePrefix(_ prefix: StorePrefix) -> StoreReply<Int> {
        pool.executor.writeReply { try await self.deleteAll(under: prefix.string) }
    }

    /// Every key under `prefix`, in a transaction of its own.
    func deleteAll(under prefix: String) async throws -> Int {
        readCache.resetBegins()
        defer { readCache.resetEnds() }
        let deleted = try await pool.transaction { db in
            let version = try await locks.lockAll(db)
            let deleted = try await deleteRows(db, under: prefix)
            try await recordPrefixDelete(db, version: version, prefix: prefix, deleted: deleted)
            return (Int(deleted), version)
        }
        countCommit()
        await changes.committed(deleted.1)
        return deleted.0
    }

    /// Deletes the rows under `prefix` (expired ones too), their parts,
    /// and their share of the totals, in the caller's transaction, which
    /// holds every key's lock (`WriteLocks.lockAll`); returns how many rows
    /// went. A reset deletes rows too, rather than `TRUNCATE` them:
    /// `TRUNCATE` waits for every reader of the tables, and holds up every
    /// read meanwhile.
    func deleteRows(_ db: PGConnection, under prefix: String) async throws -> Int64 {
        if prefix.isEmpty {
            let deleted = try await db.query(WriteLocks.readTotals).first!.int(0)!
            // Not every part: an upload in flight has committed parts no
            // value names yet, to be named by its row after this.
            _ = try await db.query("DELETE FROM larder_parts WHERE blob IN (SELECT blob FROM larder_values WHERE blob IS NOT NULL)")
            _ = try await db.query("DELETE FROM larder_values")
            _ = try await db.query("DELETE FROM larder_totals")
            return deleted
        }
        let row = try await db.query("""
            WITH gone AS (DELETE FROM larder_values WHERE key >= $1 AND key < $2 AND starts_with(key, $1)
                          RETURNING size, stored, blob),
            parts AS (DELETE FROM larder_parts WHERE blob IN (SELECT blob FROM gone WHERE blob IS NOT NULL))
            SELECT count(*), coalesce(sum(size), 0)::int8, coalesce(sum(stored), 0)::int8 FROM gone
            """, [.text(prefix), .text(Self.upperBound(prefix))]).first!
        let deleted = row.int(0)!
        _ = try await db.query(WriteLocks.addToTotals(keys: "$1::int8", logical: "$2::int8", stored: "$3::int8"),
                               [.int(-deleted), .int(-row.int(1)!), .int(-row.int(2)!)])
        return deleted
    }

    /// The prefix delete's change (`deletePrefix` in the feed), in the caller's transaction.
    func recordPrefixDelete(_ db: PGConnection, version: Int64, prefix: String, deleted: Int64) async throws {
        _ = try await db.query("INSERT INTO larder_changes (version, kind, prefix, deleted) VALUES ($1, 'delete', $2, $3)",
                               [.int(version), .text(prefix), .int(deleted)])
    }
}
