import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// A snapshot restore, all or nothing (API.md, Snapshots): staged out of
/// the database (`PostgresRestore`), then published in ONE transaction on
/// one connection, so a reader, on this server or any other, sees the old
/// rows under the prefix or the new ones, never a mix, and a failure at
/// any point (a lost connection, a database error, the process's end)
/// leaves the old ones: PostgreSQL rolls back whatever did not commit.
///
/// The transaction is that of a prefix delete (`deleteAll`) followed by a
/// PUT per value, as one write: it takes every key's lock (`lockAll`),
/// with `replace` deletes the rows under the prefix as `deletePrefix` does
/// and records its change first, then writes the values in batches
/// (`RestoreBatch`), each with a version of its own (`RestoreVersions`)
/// and a `put` change, then commits. The changes are rows of the
/// transaction: the feeds of every server (this one's included, which
/// tells its observer, watches and event streams) read them only once it
/// commits, in version order, the prefix delete first, and a restore that
/// does not commit tells nobody anything. The other servers are told to
/// read after the commit, as for every write (`PostgresChangeFeed.announce`):
/// a `NOTIFY` in the transaction would hold the database's notify lock
/// through the commit's flush, and every other write would wait for it.
extension PostgresStore {
    package func beginRestore(under prefix: StorePrefix, replace: Bool) throws -> any RestoreTransaction {
        try PostgresRestore(store: self, prefix: prefix, replace: replace)
    }

    /// Publishes the staged values (each key's last) under `prefix`;
    /// returns how many. Large values' parts are copied first, each part
    /// committing on its own as an upload's do (`copyParts`): no value
    /// names them until the transaction commits, and they are dropped if
    /// it surely did not.
    func commitRestore(_ spool: RestoreSpool, prefix: String, replace: Bool) async throws -> Int {
        let values = spool.latest()
        var blobs = [Int64?](repeating: nil, count: values.count)
        do {
            for (i, entry) in values.enumerated() where entry.length > options.partSize {
                blobs[i] = try await copyParts(length: entry.length) { offset, count in
                    try spool.bytes(of: entry, at: offset, count: count)
                }
            }
        } catch {
            for case let blob? in blobs { await dropParts(blob) }
            throw error
        }
        // Reads on this server neither fill the cache with what the
        // transaction replaces nor keep it past the commit (read-your-writes
        // here); other servers' caches drop it as their feeds deliver the
        // changes. Only while the commit runs: staging took no database time.
        if replace { readCache.resetBegins() } else { values.forEach { readCache.writeBegins($0.key) } }
        defer { if replace { readCache.resetEnds() } else { values.forEach { readCache.writeEnds($0.key) } } }
        // Set once the `COMMIT` is on its way: from then on the restore may
        // have committed, and the parts its rows name must stay.
        let committing = Locked(false)
        let last: Int64
        do {
            last = try await pool.transaction { db in
                try await restoreTransaction(db, values: values, blobs: blobs, spool: spool, prefix: prefix,
                                             replace: replace, committing: committing)
            }
        } catch {
            if !committing.withLock({ $0 }) {
                for case let blob? in blobs { await dropParts(blob) }
            }
            throw PGPool.mapped(error)
        }
        countCommit()
        // This server's observer has every change of the restore before it is answered.
        await changes.committed(last)
        return values.count
    }

    /// The transaction's statements, its `COMMIT` included; returns its last version.
    private func restoreTransaction(_ db: PGConnection, values: [RestoreSpool.Entry], blobs: [Int64?], spool: RestoreSpool,
                                    prefix: String, replace: Bool, committing: Locked<Bool>) async throws -> Int64 {
        var versions = RestoreVersions(first: try await locks.lockAll(db), locks: locks)
        let now = nowNanos()
        var last: Int64 = 0
        if replace {
            let deleted = try await deleteRows(db, under: prefix)
            last = try await versions.take(db)
            try await recordPrefixDelete(db, version: last, prefix: prefix, deleted: deleted)
        }
        var batch = RestoreBatch()
        for (i, entry) in values.enumerated() {
            last = try await versions.take(db)
            var head = entry.head
            ValueFileHeader.stamp(&head, version: UInt64(last), modifiedNanos: now)
            let body = blobs[i] == nil ? try spool.bytes(of: entry, at: 0, count: entry.length) : nil
            batch.add(entry, version: last, head: head, body: body, blob: blobs[i])
            if batch.isFull || i == values.count - 1 {
                _ = try await db.pipeline([batch.statement(now: now)])
                batch = RestoreBatch()
            }
        }
        committing.withLock { $0 = true }
        do {
            _ = try await db.query("COMMIT", silence: db.commitSilence)
        } catch PGError.server(let state, let message) {
            // The database refused the commit and rolled back: nothing names the parts.
            committing.withLock { $0 = false }
            throw PGError.server(state: state, message: message)
        } catch {
            // Nothing went out (the connection was known broken): the parts may go.
            if !db.commitSent { committing.withLock { $0 = false } }
            throw error
        }
        return last
    }
}
