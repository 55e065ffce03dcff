import Dispatch
import FoundationEssentials
import LarderModel
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// The `ValueStore` on PostgreSQL: several Larder servers on one database
/// see one set of values, one version counter and one change feed.
///
/// Values are kept as the bytes the disk store would keep (its gzip file:
/// header with metadata, then deflate data), so the routes serve them the
/// same way, gzip passthrough and `-gz` ETags included. Every write is one
/// transaction that first locks its key (see `WriteLocks`): conditions are
/// checked against the committed value, writes to other keys go on beside
/// it, and versions follow each key's order. Changes reach this server's observer
/// only through `PostgresChangeFeed` (LISTEN/NOTIFY, then a read of
/// `larder_changes`), so every server delivers the same changes in the same
/// order. With `options.cacheBytes`, small values read lately are answered
/// from memory while the feed vouches for them (`PostgresReadCache`);
/// otherwise every read asks the database.
///
/// Threads: every call answers later (`StoreReply.later`): it runs as a
/// task on its pool's `PostgresExecutor`, waiting on the database as a suspended
/// continuation, and no caller's thread waits. Only start-up blocks (the
/// initializer waits for the schema and the recent changes).
package final class PostgresStore: ValueStore, UploadDestination, @unchecked Sendable {
    package let options: PostgresStoreOptions
    /// The schema holding this store's tables: `options.schema` for the
    /// default store, one of its own for each namespace.
    package let schema: String
    let connections: PostgresConnections
    /// The shared pool, working in `schema`.
    let pool: SchemaPool
    package let zlib: ZlibPool
    package let compressionModes: CompressionModeCounts? = CompressionModeCounts()
    /// Writes acknowledged after their commit, for `/metrics`: each commit
    /// is the database's flush (shared between commits or not, as the
    /// database arranges), so both counters count commits.
    package let durability: DurabilityCounts? = DurabilityCounts()
    let logger: Logger
    /// The NOTIFY channel: one per schema, so stores sharing a database
    /// do not wake each other.
    let channel: String
    let changes: PostgresChangeFeed
    /// The write locks and versions of `schema`.
    let locks: WriteLocks
    /// Small values read lately (`options.cacheBytes`; empty when 0).
    let readCache: PostgresReadCache
    private let sweeper: DispatchSourceTimer
    private let closed = Locked(false)
    private let sweeps = Locked(0)

    /// Connects (retrying for up to `startTimeout` seconds while the
    /// database comes up), migrates the schema, and loads the recent
    /// changes for `Last-Event-ID` replay before returning. The store has
    /// connections of its own.
    package convenience init(options: PostgresStoreOptions, logger: Logger = .silent(), changes: StoreChangeObserver? = nil,
                            startTimeout: Double = 30) throws {
        try self.init(options: options, schema: options.schema, connections: PostgresConnections(options: options, logger: logger),
                      logger: logger, changes: changes, startTimeout: startTimeout)
    }

    /// The store in `schema` (made if need be) on `connections`, which
    /// other stores of the same database may share.
    package init(options: PostgresStoreOptions, schema: String, connections: PostgresConnections, logger: Logger = .silent(),
                changes: StoreChangeObserver? = nil, startTimeout: Double = 30) throws {
        self.options = options
        self.schema = schema
        self.connections = connections
        self.logger = logger
        self.zlib = ZlibPool(level: options.gzipLevel)
        self.channel = "larder_" + schema
        let pool = connections.pool(schema: schema)
        self.pool = pool
        connections.retain()
        let deadline = Clock.nowNanos() + Int64(startTimeout * 1e9)
        var versionBase: Int64 = 0
        var clockState = StoreClock.State()
        while true {
            do {
                (versionBase, clockState) = try pool.executor.blockingReply {
                    try await PostgresSchema.migrate(pool)
                    return try await pool.read { db in
                        let row = try await db.query("SELECT version_base, \(Self.clockColumns) FROM larder_state").first!
                        return (row.int(0)!, Self.clockState(row, from: 1))
                    }
                }.get()
                break
            } catch StoreError.backendUnavailable(let why) where Clock.nowNanos() < deadline {
                logger.notice("postgres: waiting for the database (\(why))")
                usleep(200_000)
            } catch {
                connections.release()
                throw error
            }
        }
        self.locks = WriteLocks(schema: schema, versionBase: versionBase)
        let readCache = PostgresReadCache(capacity: options.cacheBytes)
        self.readCache = readCache
        self.changes = PostgresChangeFeed(pool: pool, listener: connections.listener, channel: channel, versionBase: versionBase,
                                          history: options.changeHistory, observer: changes, readCache: readCache, logger: logger)
        clock.adopt(clockState)
        do {
            try self.changes.start()
        } catch {
            connections.release()
            throw error
        }
        sweeper = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "larder.postgres.sweep"))
        sweeper.schedule(deadline: .now() + options.sweepInterval, repeating: options.sweepInterval,
                         leeway: .milliseconds(50))
        sweeper.setEventHandler { [weak self] in self?.sweepOnce() }
        sweeper.resume()
        self.changes.onClockNotice { [weak self] in self?.refreshClock() }
        if schema == options.schema {
            logger.notice("postgres store at \(options.redactedURL), schema \(schema)")
        } else {
            logger.info("postgres store at \(options.redactedURL), schema \(schema)")
        }
    }

    package func close() {
        guard closed.withLock({ (c: inout Bool) -> Bool in defer { c = true }; return !c }) else { return }
        sweeper.cancel()
        changes.stop()
        connections.release()
    }

    package var isIndexReady: Bool { true }
    package var stats: StoreStats { changes.stats }

    /// The time expiry and modification times read: the namespace's clock
    /// (this server's copy of it).
    @inline(__always)
    func nowNanos() -> Int64 { clock.nowNanos() }

    package let clock = StoreClock()

    package func modifiedNanos() -> Int64 { clock.nowNanos() }

    // MARK: - Reads

    /// A hit in the read cache is answered now, on the caller's thread.
    package func open(_ key: StoreKey) -> StoreReply<StoredValue> {
        if readCache.isEnabled {
            if let entry = readCache.lookup(key) {
                if entry.metadata.isExpired(now: nowNanos()) { return .now(.failure(StoreError.notFound)) }
                return .now(.success(StoredValue(cached: entry, zlib: zlib)))
            }
        }
        return pool.executor.reply { try await self.openValue(key) }
    }

    func openValue(_ key: StoreKey) async throws -> StoredValue {
        let now = nowNanos()
        guard readCache.isEnabled else {
            return try await pool.read { db in try await readValue(db, key: key.string, now: now) }
        }
        // Before the question: a change delivered meanwhile makes the insert a no-op.
        let epoch = readCache.epoch(key)
        let value = try await pool.read { db in try await readValue(db, key: key.string, now: now) }
        readCache.insert(key, value, epoch: epoch)
        return value
    }

    /// The live value of `key` in one statement (one snapshot): the row,
    /// and its parts in order for a large value, streamed into a spool file
    /// as they arrive. `StoreError.notFound` when absent or expired.
    func readValue(_ db: PGConnection, key: String, now: Int64) async throws -> StoredValue {
        let reader = ValueReader(key: key, spoolDirectory: options.spoolDirectory)
        _ = try await db.query("""
            SELECT v.head, v.body, p.bytes FROM larder_values v LEFT JOIN larder_parts p ON p.blob = v.blob
            WHERE v.key = $1 AND (v.expires IS NULL OR v.expires > $2) ORDER BY p.part
            """, [.text(key), .int(now)], onRow: { try reader.take($0) })
        return try reader.finish(zlib: zlib)
    }

    package func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) -> StoreReply<StoreListing> {
        pool.executor.reply {
            try await self.listPage(prefix: prefix.string, after: after, limit: limit, groupByDirectory: groupByDirectory)
        }
    }

    /// A page in key byte order. With `groupByDirectory`, each directory
    /// under the prefix is one entry, and the scan jumps past it.
    func listPage(prefix: String, after: String?, limit: Int, groupByDirectory: Bool) async throws -> StoreListing {
        let now = nowNanos()
        let limit = max(1, limit)
        return try await pool.read { db in
            var listing = StoreListing()
            var emitted = 0
            // Strictly after this; nil: from the start of the prefix.
            var cursor = after
            var more = false
            scan: while true {
                let want = limit - emitted + 1
                let rows = try await db.query("""
                    SELECT key, version, size, stored, expires, content_type, modified, attributes FROM larder_values
                    WHERE key >= $1 AND key > $2 AND key < $3 AND starts_with(key, $1)
                      AND (expires IS NULL OR expires > $4)
                    ORDER BY key LIMIT $5
                    """, [.text(prefix), .text(cursor ?? ""), .text(Self.upperBound(prefix)), .int(now), .int(Int64(want))]).rows
                for row in rows {
                    let key = row.string(0)!
                    if emitted == limit { more = true; break scan }
                    if groupByDirectory, let directory = Self.directory(of: key, under: prefix) {
                        // Keys of a directory already listed (`after` names it) are skipped.
                        if let after, !(after.utf8.lexicographicallyPrecedes(directory.utf8)) {
                            cursor = Self.upperBound(directory)
                            continue scan
                        }
                        listing.prefixes.append(directory)
                        emitted += 1
                        listing.next = directory
                        cursor = Self.upperBound(directory)
                        continue scan
                    }
                    listing.values.append(ListedValue(key: key, metadata: Self.metadata(row, key: key, attributesColumn: 7), storedSize: Int(row.int(3)!)))
                    emitted += 1
                    listing.next = key
                    cursor = key
                }
                if rows.count < want { break }
            }
            if !more { listing.next = nil }
            return listing
        }
    }

    /// The first common prefix of `key` below `prefix` (ending in `/`), or
    /// nil when the key lies directly under it.
    static func directory(of key: String, under prefix: String) -> String? {
        let rest = key.utf8.dropFirst(prefix.utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        return String(decoding: key.utf8[..<key.utf8.index(after: slash)], as: UTF8.self)
    }

    /// A string above every key that starts with `prefix` (in byte order)
    /// but for keys that go on with U+10FFFF U+10FFFF, a pair of
    /// noncharacters: it bounds the index scan, and `starts_with` keeps the
    /// result exact within it.
    static func upperBound(_ prefix: String) -> String { prefix + "\u{10FFFF}\u{10FFFF}" }

    /// Metadata from `key, version, size, stored, expires, content_type, modified` columns.
    /// A value's metadata from a row whose first columns are `key, version,
    /// size, stored, expires, content_type, modified`.
    static func metadata(_ row: PGRow, key: String, attributesColumn: Int) -> ValueMetadata {
        ValueMetadata(key: key, contentType: row.string(5) ?? "", size: UInt64(row.int(2) ?? 0),
                      version: UInt64(row.int(1) ?? 0), modifiedNanos: row.int(6) ?? 0, expiresNanos: row.int(4),
                      attributes: row.bytes(attributesColumn))
    }

    package func makeUniqueID() -> StoreReply<String> {
        pool.executor.reply {
            let version = try await self.pool.transaction { db in try await self.locks.takeVersion(db) }
            return Self.hex(UInt64(version))
        }
    }

    /// Versions as ETags and generated keys write them (16 hex digits).
    static func hex(_ v: UInt64) -> String { VersionHex.hex(v) }

    /// A round trip to the database; throws `backendUnavailable` saying why not.
    package func checkHealth() -> StoreReply<Void> {
        pool.executor.reply {
            try await self.pool.read { db in _ = try await db.query("SELECT version_base FROM larder_state") }
            if let why = self.changes.brokenReason { throw StoreError.backendUnavailable("the change listener is down: \(why)") }
        }
    }

    // MARK: - Expiry

    /// Removes expired values (up to 1,024 a sweep, the versions of one transaction), each with an `expire`
    /// change, and trims the change table. Runs on every server; the writes
    /// lock, taken exclusively, makes concurrent sweeps take turns (the
    /// second finds nothing) and keeps key writes out meanwhile.
    private func sweepOnce() {
        let now = nowNanos()
        pool.executor.run { [self] in
            do {
                _ = try await self.sweep(now: now)
            } catch {
                self.logger.debug("postgres: sweep failed: \(error)")
            }
        }
    }

    /// Answers whether it removed any (a full batch may leave more due).
    @discardableResult
    func sweep(now: Int64) async throws -> Bool {
        // The change table is trimmed every tenth sweep: a scan of the
        // newest `changeHistory` entries each time would cost more than
        // the rows it saves. Before the expiry: its changes (up to 1,024
        // in one transaction) must reach the other servers' feeds before
        // a trim can take them.
        if sweeps.withLock({ (n: inout Int) -> Bool in n += 1; return n % 10 == 0 }) { try await changes.trim() }
        // Both in `expires` order: so shaped, the plan kept for them (generic,
        // `now` unknown) walks the expiry index from its start; without the
        // order it scanned the whole table every second.
        let due = try await pool.read { db in
            try await db.query("SELECT 1 FROM larder_values WHERE expires <= $1 ORDER BY expires LIMIT 1", [.int(now)]).rows.count
        }
        var expired = false
        if due > 0 {
            expired = try await pool.transaction { db -> Bool in
                var version = try await locks.lockAll(db)
                let gone = try await db.query("""
                    DELETE FROM larder_values WHERE key IN
                      (SELECT key FROM larder_values WHERE expires <= $1 ORDER BY expires LIMIT $2)
                    RETURNING key, size, stored, blob, version, expires
                    """, [.int(now), .int(WriteLocks.versionsPerTransaction)]).rows
                guard !gone.isEmpty else { return false }
                let logical = gone.reduce(Int64(0)) { $0 + ($1.int(1) ?? 0) }
                let stored = gone.reduce(Int64(0)) { $0 + ($1.int(2) ?? 0) }
                _ = try await db.query(WriteLocks.addToTotals(keys: "$1", logical: "$2", stored: "$3"),
                                       [.int(-Int64(gone.count)), .int(-logical), .int(-stored)])
                // In expiry order (then key order), as the disk store's sweep
                // sends them; the events and the parts in one statement each,
                // not one round trip per key (an advance of the clock may
                // expire 100,000 keys at once).
                let ordered = gone.sorted { a, b in
                    let (ea, eb) = (a.int(5) ?? 0, b.int(5) ?? 0)
                    return ea != eb ? ea < eb : a.string(0)!.utf8.lexicographicallyPrecedes(b.string(0)!.utf8)
                }
                var versions: [Int64] = [], keys: [String] = [], removed: [Int64] = [], blobs: [Int64] = []
                for row in ordered {
                    versions.append(version)
                    version += 1
                    keys.append(row.string(0)!)
                    removed.append(row.int(4)!)
                    if let blob = row.int(3) { blobs.append(blob) }
                }
                _ = try await db.query("""
                    INSERT INTO larder_changes (version, kind, key, removed)
                      SELECT v, 'expire', k, r FROM unnest($1::int8[], $2::text[], $3::int8[]) AS t(v, k, r)
                    """, [PGArray.int8(versions), PGArray.text(keys), PGArray.int8(removed)])
                if !blobs.isEmpty {
                    _ = try await db.query("DELETE FROM larder_parts WHERE blob = ANY($1::int8[])", [PGArray.int8(blobs)])
                }
                return true
            }
        }
        if expired { changes.announce() }
        // A change whose server stopped between its commit and its
        // announcement is read here at the latest.
        changes.readChanges()
        return expired
    }

}

/// Collects one value's rows: the head and an inline body in memory, or
/// the head and the parts in an unlinked spool file. Used on the
/// connection's queue only.
final class ValueReader: @unchecked Sendable {
    let key: String
    let spoolDirectory: String
    private var head: [UInt8]?
    private var inline: [UInt8]?
    private var spool: SpoolFile?

    init(key: String, spoolDirectory: String) {
        self.key = key
        self.spoolDirectory = spoolDirectory
    }

    deinit { spool?.close() }

    func take(_ row: PGRow) throws {
        if head == nil {
            head = row.bytes(0) ?? []
            if let body = row.bytes(1) {
                inline = body
            } else {
                spool = try SpoolFile(directory: spoolDirectory)
                try spool!.append(head!)
            }
        }
        if let part = row.bytes(2), let spool { try spool.append(part) }
    }

    func finish(zlib: ZlibPool) throws -> StoredValue {
        guard let head else { throw StoreError.notFound }
        if let inline {
            return try StoredValue(fileBytes: head + inline, origin: "postgres:\(key)", zlib: zlib)
        }
        guard let spool else { throw StoreError.notFound }
        self.spool = nil
        // The StoredValue owns the descriptor from here.
        return try StoredValue(fd: spool.takeDescriptor(), path: "postgres:\(key)", zlib: zlib)
    }
}
