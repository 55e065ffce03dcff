import FoundationEssentials
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// Writes. Each is one transaction whose first statement takes the key's
/// lock and the version (`WriteLocks`); the key's current row is read after
/// it, so a write condition is checked against the last committed value
/// and two racing writers never both win. The change row is part of the
/// same transaction: a change is in the feed exactly when it commits. The
/// other servers are told after the commit (`PostgresChangeFeed.announce`):
/// a `NOTIFY` in the transaction would take the database's notify lock
/// through the commit's flush, and so make every write wait its turn. A
/// write is acknowledged only after `COMMIT` succeeds.
extension PostgresStore {
    /// The key's row as the write lock found it.
    struct CurrentRow {
        let metadata: ValueMetadata
        let stored: Int64
        let blob: Int64?
        /// Whether it has expired (to clients it is absent; its row is still counted).
        let expired: Bool
        /// The metadata a write condition sees: nil when absent or expired.
        var live: ValueMetadata? { expired ? nil : metadata }
    }

    /// Reads the key's row (`currentRow(from:)`).
    func currentRow(_ key: String) -> PGConnection.Statement {
        PGConnection.Statement(sql: """
            SELECT key, version, size, stored, expires, content_type, modified, blob, attributes FROM larder_values WHERE key = $1
            """, parameters: [.text(key)])
    }

    func currentRow(from result: PGResult, key: String, now: Int64) -> CurrentRow? {
        guard let row = result.first else { return nil }
        let meta = Self.metadata(row, key: key, attributesColumn: 8)
        return CurrentRow(metadata: meta, stored: row.int(3) ?? 0, blob: row.int(7), expired: meta.isExpired(nowNanos: now))
    }

    /// Locks the key and reads its row, in one round trip; returns the
    /// transaction's version and the row.
    func lockAndRead(_ db: PGConnection, key: String, now: Int64) async throws -> (Int64, CurrentRow?) {
        let answers = try await db.pipeline(locks.lockKey(key) + [currentRow(key)])
        return (locks.version(of: answers[1]), currentRow(from: answers[2], key: key, now: now))
    }

    // MARK: - Uploads

    package func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                            expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
        try makeUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos, condition: condition)
    }

    /// An upload encoding in memory, and into an unlinked spool file once
    /// it outgrows that: a small value makes no file (creating and
    /// dropping one was about a tenth of the server's time of a small write).
    /// `destination` publishes it: this store, or a restore that stages it.
    func makeUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding, expiresNanos: Int64?,
                    condition: WriteCondition?, destination: (any UploadDestination)? = nil) throws -> ValueUpload {
        try ValueMetadata.checkContentType(contentType)
        let meta = ValueMetadata(key: key.string, contentType: contentType, size: 0, version: 0,
                                 modifiedNanos: 0, expiresNanos: expiresNanos)
        let directory = options.spoolDirectory
        return try ValueUpload(destination: destination ?? self, key: key, metadata: meta, encoding: encoding,
                               maxSize: options.maxValueSize, condition: condition) {
            let spool = try SpoolFile(directory: directory)
            return (spool.path, spool.takeDescriptor())
        }
    }

    /// `count` bytes of the completed upload's value file from `offset`:
    /// from memory, or from its spool file.
    func bytes(of upload: ValueUpload, at offset: Int, count: Int) throws -> [UInt8] {
        try upload.bytesInMemory(at: offset, count: count) ?? SpoolFile.read(upload.fd, at: offset, count: count, path: upload.tempPath)
    }

    /// The key is named when the write commits: the prefix and the
    /// write's version, in hex as `makeUniqueID` gives it, so generated keys
    /// sort in commit order on every server, with no round trip before the
    /// body is read.
    package func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                            expiresNanos: Int64?) throws -> ValueWriter {
        let placeholder = try StoreKey(prefix.string + Self.hex(0))
        // The version is new, but a client may have written a key shaped
        // like a generated one: create-only, checked under the key's lock.
        let upload = try makeUpload(key: placeholder, contentType: contentType, encoding: encoding,
                                    expiresNanos: expiresNanos, condition: WriteConditions.mustNotExist)
        upload.generatedKeyPrefix = prefix.string
        return upload
    }

    /// A placeholder: the real version is taken when the write commits.
    package func nextVersion() throws -> UInt64 { 0 }

    package func finishUpload(_ upload: ValueUpload) -> StoreReply<PutOutcome> {
        if let failed = upload.completeOrFail() { return failed }
        let handed = HandedUpload(upload)
        return pool.executor.writeReply { [self] in
            let upload = handed.value
            defer { upload.abort() }
            let created = try await self.commit(upload)
            return upload.succeeded(created: created)
        }
    }

    /// Copies the completed spool file into the database: a small value
    /// into its row, a large one into parts first, each part a transaction
    /// of its own (`copyParts`), then the row, once the key is locked and
    /// its condition met. Returns whether the key is new.
    func commit(_ upload: ValueUpload) async throws -> Bool {
        let bodyLength = Int(upload.written) - upload.headerLength
        let inline = bodyLength <= options.partSize ? try bytes(of: upload, at: upload.headerLength, count: bodyLength) : nil
        let blob = inline == nil ? try await copyParts(upload) : nil
        // From before the row's transaction to however it ends (committed,
        // refused, unknown), before it is answered: read-your-writes here.
        let cachedKey = upload.generatedKeyPrefix == nil ? upload.key.string : nil
        if let cachedKey { readCache.writeBegins(cachedKey) }
        defer { if let cachedKey { readCache.writeEnds(cachedKey) } }
        // Set once the row and its `COMMIT` are on their way: from then on
        // the write may have committed, and its parts must stay.
        let committing = Locked(false)
        let created: (Bool, Int64)
        do {
            created = try await pool.transaction { db in
                let now = nowNanos()
                if upload.condition == nil && upload.generatedKeyPrefix == nil {
                    // Nothing to check before writing: the whole write in one round trip.
                    committing.withLock { $0 = true }
                    do {
                        let head = upload.header(version: 0, modifiedNanos: now)
                        let (version, created) = try await writeRowInOneTrip(
                            db, key: upload.key.string, now: now, head: head, body: inline, blob: blob,
                            size: Int64(upload.metadata.size), stored: Int64(head.count + bodyLength),
                            expires: upload.metadata.expiresNanos, contentType: upload.metadata.contentType,
                            attributes: upload.metadata.attributes)
                        upload.committed(version: UInt64(version), modifiedNanos: now)
                        return (created, version)
                    } catch PGError.server(let state, let message) {
                        committing.withLock { $0 = false }
                        throw PGError.server(state: state, message: message)
                    } catch {
                        // Nothing went out (the connection was known broken): the parts may go.
                        if !db.commitSent { committing.withLock { $0 = false } }
                        throw error
                    }
                }
                let version: Int64
                let key: String?
                let old: CurrentRow?
                if let prefix = upload.generatedKeyPrefix {
                    version = try await locks.lockForNewKey(db)
                    key = prefix + Self.hex(UInt64(version))
                    let answers = try await db.pipeline([locks.lockNamedKey(key!), currentRow(key!)])
                    old = currentRow(from: answers[1], key: key!, now: now)
                } else {
                    (version, old) = try await lockAndRead(db, key: upload.key.string, now: now)
                    key = nil
                }
                let keyString = key ?? upload.key.string
                try upload.condition?(old?.live)
                let head = upload.header(version: UInt64(version), modifiedNanos: now, key: key)
                committing.withLock { $0 = true }
                do {
                    try await writeRow(db, key: keyString, version: version, now: now, old: old, head: head,
                                       body: inline, blob: blob, size: Int64(upload.metadata.size),
                                       stored: Int64(head.count + bodyLength), expires: upload.metadata.expiresNanos,
                                       contentType: upload.metadata.contentType, attributes: upload.metadata.attributes)
                } catch PGError.server(let state, let message) {
                    // The database refused a statement: the pipeline's `COMMIT` did not run.
                    committing.withLock { $0 = false }
                    throw PGError.server(state: state, message: message)
                }
                upload.committed(version: UInt64(version), modifiedNanos: now, key: key)
                return (old?.live == nil, version)
            }
        } catch {
            if let blob, !committing.withLock({ $0 }) { await dropParts(blob) }
            throw error
        }
        countCommit()
        await changes.committed(created.1)
        return created.0
    }

    /// A write's transaction committed: the database flushed it.
    func countCommit() {
        durability?.addFlush()
        durability?.addWrite()
    }

    /// Puts the row, replaces the old one's parts, adjusts the totals and
    /// records the change, and commits the caller's transaction, in one
    /// round trip.
    func writeRow(_ db: PGConnection, key: String, version: Int64, now: Int64, old: CurrentRow?, head: [UInt8],
                  body: [UInt8]?, blob: Int64?, size: Int64, stored: Int64, expires: Int64?, contentType: String,
                  attributes: [UInt8]?) async throws {
        var steps = [PGConnection.Statement(sql: """
            WITH up AS (
              INSERT INTO larder_values (key, version, size, stored, expires, content_type, modified, head, body, blob, attributes)
              VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $14)
              ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, stored = EXCLUDED.stored,
                expires = EXCLUDED.expires, content_type = EXCLUDED.content_type, modified = EXCLUDED.modified,
                head = EXCLUDED.head, body = EXCLUDED.body, blob = EXCLUDED.blob, attributes = EXCLUDED.attributes),
            totals AS (\(WriteLocks.addToTotals(keys: "$11::int8", logical: "$12::int8", stored: "$13::int8"))),
            change AS (
              INSERT INTO larder_changes (version, kind, key, size) VALUES ($2, 'put', $1, $3))
            SELECT 1
            """, parameters: [.text(key), .int(version), .int(size), .int(stored), expires.map { .int($0) } ?? .null, .text(contentType),
                  .int(now), .bytes(head), body.map { .bytes($0) } ?? .null, blob.map { .int($0) } ?? .null,
                  .int(old == nil ? 1 : 0), .int(size - Int64(old?.metadata.size ?? 0)), .int(stored - (old?.stored ?? 0)),
                  attributes.map { .bytes($0) } ?? .null])]
        if let oldBlob = old?.blob {
            steps.append(PGConnection.Statement(sql: "DELETE FROM larder_parts WHERE blob = $1", parameters: [.int(oldBlob)]))
        }
        steps.append(PGConnection.Statement(sql: "COMMIT"))
        _ = try await db.pipeline(steps, silence: db.commitSilence)
    }

    /// `lockAndRead` and `writeRow` as one round trip, for a write with no
    /// condition to check in between: the key's lock, then one statement
    /// that takes the transaction's version, reads the key's row as its
    /// last writer committed it, puts the new one with the version written
    /// into its header (`ValueFileHeader.versionOffset`; `head` comes with
    /// 0 there), adjusts the totals by the difference, records the change
    /// and drops the old row's parts; then `COMMIT`. Returns the version
    /// and whether the key was new to clients (absent or expired).
    func writeRowInOneTrip(_ db: PGConnection, key: String, now: Int64, head: [UInt8], body: [UInt8]?, blob: Int64?,
                           size: Int64, stored: Int64, expires: Int64?, contentType: String,
                           attributes: [UInt8]?) async throws -> (version: Int64, created: Bool) {
        // The header with the version's bytes set, little-endian as it has
        // them: plain expressions (an aggregate over a series cost a plan
        // node, set up on every run).
        let headWithVersion = (0..<8).reduce("$7::bytea") { head, i in
            "set_byte(\(head), $11::int4 + \(i), ((v.version >> \(8 * i)) & 255)::int4)"
        }
        let write = PGConnection.Statement(sql: """
            WITH v AS (SELECT \(locks.versionSQL) AS version),
            old AS (SELECT size, stored, blob, expires FROM larder_values WHERE key = $1::text),
            up AS (
              INSERT INTO larder_values (key, version, size, stored, expires, content_type, modified, head, body, blob, attributes)
              SELECT $1::text, v.version, $2::int8, $3::int8, $4::int8, $5::text, $6::int8,
                \(headWithVersion), $8::bytea, $9::int8, $10::bytea FROM v
              ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, stored = EXCLUDED.stored,
                expires = EXCLUDED.expires, content_type = EXCLUDED.content_type, modified = EXCLUDED.modified,
                head = EXCLUDED.head, body = EXCLUDED.body, blob = EXCLUDED.blob, attributes = EXCLUDED.attributes),
            totals AS (\(WriteLocks.addToTotals(keys: "(NOT EXISTS (SELECT FROM old))::int4::int8",
                                                logical: "$2::int8 - coalesce((SELECT size FROM old), 0)",
                                                stored: "$3::int8 - coalesce((SELECT stored FROM old), 0)"))),
            change AS (INSERT INTO larder_changes (version, kind, key, size) SELECT v.version, 'put', $1::text, $2::int8 FROM v),
            parts AS (DELETE FROM larder_parts WHERE blob = (SELECT blob FROM old))
            SELECT v.version, NOT EXISTS (SELECT 1 FROM old WHERE expires IS NULL OR expires > $6::int8) FROM v
            """, parameters: [.text(key), .int(size), .int(stored), expires.map { .int($0) } ?? .null, .text(contentType),
                              .int(now), .bytes(head), body.map { .bytes($0) } ?? .null, blob.map { .int($0) } ?? .null,
                              attributes.map { .bytes($0) } ?? .null, .int(Int64(ValueFileHeader.versionOffset))])
        // The lock and the statement get `--pg-timeout`, as a round trip of
        // their own would; only the `COMMIT` gets a commit's allowance.
        let answers = try await db.pipeline([locks.lockKeyOnly(key), write, PGConnection.Statement(sql: "COMMIT")],
                                            commitSilence: db.commitSilence)
        let row = answers[1].first!  // one row: `v` has one
        return (row.int(0)!, row.bool(1)!)
    }

    // MARK: - Deletes

    package func delete(_ key: StoreKey, condition: WriteCondition?) -> StoreReply<Bool> {
        pool.executor.writeReply { try await self.deleteValue(key.string, condition: condition) }
    }

    func deleteValue(_ key: String, condition: WriteCondition?) async throws -> Bool {
        readCache.writeBegins(key)
        defer { readCache.writeEnds(key) }
        let existed = try await pool.transaction { db -> (Bool, Int64?) in
            let now = nowNanos()
            let (version, found) = try await lockAndRead(db, key: key, now: now)
            // The condition sees the key as a client does: absent (or, over
            // fixtures, the fixture: `LayeredStore` wraps it so).
            guard let old = found else {
                try condition?(nil)
                return (false, nil)
            }
            // An expired value goes too; to the client it was absent already.
            if !old.expired { try condition?(old.live) } else { try condition?(nil) }
            var steps = [PGConnection.Statement(sql: """
                WITH gone AS (DELETE FROM larder_values WHERE key = $1),
                totals AS (\(WriteLocks.addToTotals(keys: "-1", logical: "-$2::int8", stored: "-$3::int8"))),
                change AS (INSERT INTO larder_changes (version, kind, key, removed) VALUES ($4, $5, $1, $6))
                SELECT 1
                """, parameters: [.text(key), .int(Int64(old.metadata.size)), .int(old.stored), .int(version),
                      .text(old.expired ? "expire" : "delete"), .int(Int64(old.metadata.version))])]
            if let blob = old.blob {
                steps.append(PGConnection.Statement(sql: "DELETE FROM larder_parts WHERE blob = $1", parameters: [.int(blob)]))
            }
            steps.append(PGConnection.Statement(sql: "COMMIT"))
            _ = try await db.pipeline(steps, silence: db.commitSilence)
            return (!old.expired, version)
        }
        countCommit()
        if let version = existed.1 { await changes.committed(version) }
        return existed.0
    }

    // MARK: - JSON updates

    /// Read, transform and write under the key's lock, in one transaction:
    /// nothing can write the key in between, so no retry is needed. The
    /// transform runs in the task, between the statements.
    package func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                       _ transform: @escaping @Sendable (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) -> StoreReply<PutOutcome> {
        pool.executor.writeReply { [self] in
            let outcome = try await updateTransaction(key, condition: condition, maxValueBytes: maxValueBytes, transform)
            // With the connection back in the pool: the feed may need one.
            await changes.committed(Int64(outcome.metadata.version))
            return outcome
        }
    }

    private func updateTransaction(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                                   _ transform: @escaping (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) async throws -> PutOutcome {
        readCache.writeBegins(key.string)
        defer { readCache.writeEnds(key.string) }
        // Made in the transaction, dropped (its spool file closed) however it ends.
        var made: ValueUpload?
        defer { made?.abort() }
        do {
            let (upload, created) = try await pool.transaction { db -> (ValueUpload, Bool) in
                let now = nowNanos()
                let (version, old) = try await lockAndRead(db, key: key.string, now: now)
                let value = old?.live == nil ? nil : try await readValue(db, key: key.string, now: now)
                defer { value?.close() }
                // Inflating, transforming and deflating up to `maxValueBytes`
                // is CPU time the event loop must not spend: it would hold
                // up every other connection's answers.
                made?.abort()
                made = nil
                let (upload, body, bodyLength) = try await PostgresExecutor.offLoop { () -> (ValueUpload, [UInt8], Int) in
                    var bytes: [UInt8]?
                    if let live = old?.live {
                        guard live.size <= UInt64(maxValueBytes) else { throw StoreError.tooLarge(limit: Int64(maxValueBytes)) }
                        bytes = try value?.readAll()
                    }
                    try condition?(old?.live)
                    let updated = try transform(old?.live, bytes)
                    guard updated.bytes.count <= maxValueBytes else { throw StoreError.tooLarge(limit: Int64(maxValueBytes)) }
                    let upload = try self.makeUpload(key: key, contentType: updated.contentType, encoding: .identity,
                                                     expiresNanos: old?.live?.expiresNanos, condition: nil)
                    do {
                        try updated.bytes.withUnsafeBytes { try upload.write($0) }
                        try upload.complete()
                        let bodyLength = Int(upload.written) - upload.headerLength
                        return (upload, try self.bytes(of: upload, at: upload.headerLength, count: bodyLength), bodyLength)
                    } catch {
                        upload.abort()
                        throw error
                    }
                }
                made = upload
                let head = upload.header(version: UInt64(version), modifiedNanos: now)
                try await writeRow(db, key: key.string, version: version, now: now, old: old, head: head, body: body,
                                   blob: nil, size: Int64(upload.metadata.size), stored: Int64(head.count + bodyLength),
                                   expires: upload.metadata.expiresNanos, contentType: upload.metadata.contentType,
                                   attributes: upload.metadata.attributes)
                upload.committed(version: UInt64(version), modifiedNanos: now)
                return (upload, old?.live == nil)
            }
            countCommit()
            return upload.succeeded(created: created)
        } catch {
            throw PGPool.mapped(error)
        }
    }
}
