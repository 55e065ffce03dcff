import Foundation
import LarderPostgres
import LarderStorage
import LarderSupport
import LarderTestSupport
import LarderValueFile
import Testing
import LarderStoreVocabulary

/// A snapshot restore on PostgreSQL is one transaction (API.md, Snapshots):
/// nothing shows before it commits, everything at once when it does, and
/// nothing at all when it fails part way. Against real PostgreSQL servers
/// of the tests' own (a restore's transaction holds every feed on its
/// server back while it runs; a failing one is made to stop part way).
@Suite(.longBlockingLane, .serialized, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct PostgresRestoreTests {
    static let attributes = Array("restored attributes".utf8)

    /// `prefix` + a zero-padded number: keys in staging order are in key order too.
    static func key(_ prefix: String, _ i: Int) -> String { prefix + String(format: "%05d", i) }

    @Test func aReplaceRestorePublishesExactlyTheNewSetAndItsChangesOnlyAtCommit() throws {
        let database = try TestPostgres.makePrivate()
        // Small parts: a few values of either set go in parts.
        let rig = try RestoreRig(database: database) { $0.partSize = 16 * 1024 }
        let mine = ChangeRecorder(), theirs = ChangeRecorder()
        let store = try rig.open(mine), other = try rig.open(theirs)
        for i in 0..<5 { _ = try RestoreRig.put(store, Self.key("a/old", i), Array("old \(i)".utf8)) }
        _ = try RestoreRig.put(store, "a/shared", Bytes.random(count: 100_000, seed: 1))
        _ = try RestoreRig.put(store, "b/kept", Array("outside the prefix".utf8))
        for recorder in [mine, theirs] { #expect(recorder.changes(after: 0, count: 7).count == 7) }
        let oldKeys = Set(try RestoreRig.list(store, "a/").map(\.key))
        let oldMaxVersion = try #require(try RestoreRig.list(store, "").map(\.metadata.version).max())
        let partsBefore = try database.psql("SELECT count(*) FROM \(rig.schema).larder_parts")

        // More values than one transaction id has versions (1,024), one
        // replacing a value in parts, one large, one key staged twice.
        var staged = (0..<2_500).map { (key: Self.key("a/n", $0), value: Array("new \($0)".utf8)) }
        staged.append(("a/shared", Array("shared, new".utf8)))
        // Over 1 MiB: deflated in segments, whose table is in the header.
        staged.append(("a/big", Bytes.random(count: 1_500_000, seed: 2, alphabetBits: 4)))
        staged.append((Self.key("a/n", 7), Array("staged twice: the last one wins".utf8)))
        var expected: [String: [UInt8]] = [:]
        for (key, value) in staged { expected[key] = value }
        let order = staged.enumerated().filter { item in !staged[(item.offset + 1)...].contains { $0.key == item.element.key } }
            .map(\.element.key)

        let restore = try store.beginRestore(under: StorePrefix(bytes: Array("a/".utf8)), replace: true)
        try RestoreRig.stage(restore, staged, attributes: Self.attributes)
        // Staged: nothing in the database, nothing told. The feeds read at
        // least every sweep (1 s): after one, still nothing.
        Thread.sleep(forTimeInterval: 1.2)
        #expect(Set(try RestoreRig.list(other, "a/").map(\.key)) == oldKeys)
        #expect(mine.count == 7 && theirs.count == 7)
        #expect(try database.psql("SELECT count(*) FROM \(rig.schema).larder_changes") == "7")
        #expect(try database.psql("SELECT count(*) FROM \(rig.schema).larder_parts") == partsBefore)

        let began = Clock.nowNanos()
        let reply = restore.commit()
        if case .now = reply { Issue.record("a restore's commit answered at once: a thread would have waited on the database") }
        #expect(try reply.get() == expected.count)
        let ended = Clock.nowNanos()

        // Exactly the new set, through either server, each value as staged.
        let listed = try RestoreRig.list(other, "a/")
        #expect(listed.map(\.key) == expected.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        let versions = Dictionary(uniqueKeysWithValues: listed.map { ($0.key, $0.metadata.version) })
        #expect(Set(versions.values).count == versions.count)
        #expect(versions.values.allSatisfy { $0 > oldMaxVersion })
        for (i, key) in order.enumerated() where i % 50 == 0 || key == "a/big" || key == "a/shared" || key == Self.key("a/n", 7) {
            let (meta, bytes) = try RestoreRig.read(i % 2 == 0 ? store : other, key)
            #expect(bytes == expected[key], "\(key)")
            #expect(meta.version == versions[key] && meta.attributes == Self.attributes, "\(key)")
            #expect(meta.modifiedNanos >= began && meta.modifiedNanos <= ended, "\(key)")
        }
        #expect(try RestoreRig.read(other, "b/kept").1 == Array("outside the prefix".utf8))

        // Told once committed, the same on both servers: the prefix delete
        // (the 6 old values), then a put per key in staging order, with
        // increasing versions; each put's version is its value's.
        for recorder in [mine, theirs] {
            let changes = recorder.changes(after: 7, count: 1 + expected.count)
            #expect(changes.count == 1 + expected.count)
            guard changes.count == 1 + expected.count else { continue }
            #expect(changes[0].key == nil && changes[0].prefix == "a/" && changes[0].deleted == 6)
            #expect(changes.dropFirst().map(\.key) == order)
            #expect(changes.dropFirst().allSatisfy { $0.kind == .put && $0.version == versions[$0.key!] })
            #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.version < $1.version })
            #expect(changes[0].version > oldMaxVersion)
        }
        // The totals follow; the replaced value's parts went, the new large one's are there.
        try Poll.until(10, "the totals to count the restore") { store.stats.keys == expected.count + 1 }
        #expect(try database.psql("""
            SELECT count(*) = count(DISTINCT blob) FILTER (WHERE blob IS NOT NULL) + count(*) FILTER (WHERE blob IS NULL)
              AND count(*) FILTER (WHERE blob IS NOT NULL) = 1
              AND (SELECT count(DISTINCT blob) FROM \(rig.schema).larder_parts) = 1
            FROM \(rig.schema).larder_values
            """) == "t")
        try expectStoredAsAPutStoresThem(rig: rig, keys: ["a/big", Self.key("a/n", 1)], values: expected)
    }

    /// The rows a restore wrote are the rows a PUT of the same value writes
    /// (in another schema), but for the version and modified time in the header.
    private func expectStoredAsAPutStoresThem(rig: RestoreRig, keys: [String], values: [String: [UInt8]]) throws {
        let putRig = try RestoreRig(database: rig.database) { $0.partSize = rig.options.partSize }
        let store = try putRig.open()
        for key in keys { _ = try RestoreRig.put(store, key, values[key]!, attributes: Self.attributes) }
        let list = keys.map { "'\($0)'" }.joined(separator: ", ")
        func rows(_ schema: String) throws -> String {
            // The header's version and modified time: 16 bytes from `ValueFileHeader.versionOffset` (26).
            try rig.database.psql("""
                SELECT key, size, stored, content_type, md5(attributes), md5(body),
                  md5(overlay(head PLACING '\\x00000000000000000000000000000000'::bytea FROM 27 FOR 16)),
                  (SELECT md5(string_agg(bytes, ''::bytea ORDER BY part)) FROM \(schema).larder_parts p WHERE p.blob = v.blob)
                FROM \(schema).larder_values v WHERE key IN (\(list)) ORDER BY key
                """)
        }
        let restored = try rows(rig.schema)
        #expect(restored.split(separator: "\n").count == keys.count)
        #expect(restored == (try rows(putRig.schema)))
    }

    /// The restore's transaction is held part way (a later batch waits for
    /// a row another session is inserting), then its database connection
    /// is ended (`pg_terminate_backend`) or the database crashes
    /// (`pg_ctl stop -m immediate`, then started again): the restore
    /// fails, and the prefix has exactly its old values, the totals and
    /// the feed too. Then the same restore commits.
    @Test(arguments: [false, true])
    func aRestoreCutShortPartWayLeavesExactlyTheOldValues(crashTheDatabase: Bool) throws {
        let database = try TestPostgres.makePrivate()
        // The change table keeps more than the 20,002 changes checked at
        // the end: with the default 10,000 a sweep's trim may take changes
        // a slow feed has not read yet (15,000 of them delivered under
        // AddressSanitizer), which is the trim's promise, not a failure.
        let rig = try RestoreRig(database: database) {
            $0.partSize = 16 * 1024
            $0.changeHistory = 100_000
        }
        let recorder = ChangeRecorder()
        let store = try rig.open(recorder)
        for i in 0..<300 { _ = try RestoreRig.put(store, Self.key("p/old", i), Array("old \(i)".utf8)) }
        _ = try RestoreRig.put(store, "p/big", Bytes.random(count: 50_000, seed: 3))
        _ = try RestoreRig.put(store, "q/outside", Array("outside".utf8))
        #expect(recorder.changes(after: 0, count: 302).count == 302)
        let before = try snapshot(store, rig)

        let count = 20_000
        var staged = (0..<count).map { (key: Self.key("p/n", $0), value: Array("new value \($0)".utf8)) }
        staged.append(("p/big", Bytes.random(count: 60_000, seed: 4)))
        let restore = try store.beginRestore(under: StorePrefix(bytes: Array("p/".utf8)), replace: true)
        try RestoreRig.stage(restore, staged)

        // A session inserting the key of the 16th batch: the restore's
        // upsert of it waits for that session, with 15 batches written.
        let blocker = try database.session()
        defer { blocker.close() }
        blocker.send("""
            BEGIN; INSERT INTO \(rig.schema).larder_values (key, version, size, stored, content_type, modified, head)
              VALUES ('\(Self.key("p/n", 15_500))', 0, 0, 0, '', 0, '\\x00')
            """)
        blocker.send("SELECT 'inserted'")
        try blocker.wait(forLine: "inserted")
        let reply = restore.commit()
        let waiting = """
            SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%unnest%' AND backend_xid IS NOT NULL
            """
        try Poll.until(30, "the restore's transaction to wait on the session's row") { try !database.psql(waiting).isEmpty }
        if crashTheDatabase {
            try database.stop(mode: "immediate")
            try database.start()
        } else {
            #expect(try database.psql("SELECT pg_terminate_backend(pid) FROM (\(waiting)) w") == "t")
        }
        let failure: (any Error)? = { do { _ = try reply.get(); return nil } catch { return error } }()
        let error = try #require(failure, "a restore whose connection was lost part way reported success")
        guard case StoreError.backendUnavailable = error else {
            Issue.record("expected backendUnavailable, got \(error)")
            return
        }
        blocker.close()
        // After a crash the pool waits out its backoff before connecting again.
        try Poll.until(30, "the store to reach the database again") { (try? RestoreRig.list(store, "q/")) != nil }

        // Exactly as before: keys, versions, values, totals, and no change
        // told. The parts of the restore's large value, copied before its
        // transaction, are dropped when it fails; not when the database is
        // down then (best effort, as an upload's): parts no value names
        // are only space.
        var after = try snapshot(store, rig)
        if crashTheDatabase { after.allParts = before.allParts }
        #expect(after == before)
        #expect(try RestoreRig.read(store, "p/big").1 == Bytes.random(count: 50_000, seed: 3))
        #expect(recorder.count == 302)

        // The store goes on: the same values, restored again, commit.
        let again = try store.beginRestore(under: StorePrefix(bytes: Array("p/".utf8)), replace: true)
        try RestoreRig.stage(again, staged)
        #expect(try again.commit().get() == count + 1)
        #expect(try RestoreRig.list(store, "p/").count == count + 1)
        #expect(try RestoreRig.read(store, Self.key("p/n", 15_500)).1 == Array("new value 15500".utf8))
        #expect(recorder.changes(after: 302, count: count + 2).count == count + 2)
    }

    /// What a failed restore must leave as it was: the listing of the
    /// store (every key, version and size), the totals, the change table,
    /// the parts values name, and all parts.
    private struct Snapshot: Equatable {
        var listed: [String], totals: String, changes: String, namedParts: String, allParts: String
    }

    private func snapshot(_ store: PostgresStore, _ rig: RestoreRig) throws -> Snapshot {
        let schema = rig.schema
        return Snapshot(
            listed: try RestoreRig.list(store, "").map { "\($0.key) \($0.metadata.version) \($0.metadata.size)" },
            totals: try rig.database.psql("SELECT sum(keys), sum(logical_bytes), sum(stored_bytes) FROM \(schema).larder_totals"),
            changes: try rig.database.psql("SELECT count(*), max(version) FROM \(schema).larder_changes"),
            namedParts: try rig.database.psql(
                "SELECT count(*), sum(length(bytes)) FROM \(schema).larder_parts WHERE blob IN (SELECT blob FROM \(schema).larder_values)"),
            allParts: try rig.database.psql("SELECT count(*), sum(length(bytes)) FROM \(schema).larder_parts"))
    }

    /// Readers list the prefix over and over, through two servers, while a
    /// restore of 3,000 values replaces 3,000 others (half of them the same
    /// keys) and, to be sure they look part way, while its transaction
    /// waits for a row another session is inserting: every listing is the
    /// old set or the new one, whole.
    @Test func aReaderDuringARestoreSeesTheOldSetOrTheNewOneNeverAMix() throws {
        let database = try TestPostgres.makePrivate()
        let rig = try RestoreRig(database: database)
        let store = try rig.open(), other = try rig.open()
        let count = 3_000
        for i in 0..<count { _ = try RestoreRig.put(store, Self.key("r/", i), Array("old \(i)".utf8)) }
        let oldSet = try RestoreRig.list(store, "r/").map { "\($0.key) \($0.metadata.version)" }
        #expect(oldSet.count == count)
        let staged = (count / 2..<(count / 2 + count)).map { (key: Self.key("r/", $0), value: Array("new value \($0)".utf8)) }
        let restore = try store.beginRestore(under: StorePrefix(bytes: Array("r/".utf8)), replace: true)
        try RestoreRig.stage(restore, staged)

        let blocker = try database.session()
        defer { blocker.close() }
        blocker.send("""
            BEGIN; INSERT INTO \(rig.schema).larder_values (key, version, size, stored, content_type, modified, head)
              VALUES ('\(Self.key("r/", count / 2 + 2_500))', 0, 0, 0, '', 0, '\\x00')
            """)
        blocker.send("SELECT 'inserted'")
        try blocker.wait(forLine: "inserted")

        // Each reader's listings, as (keys with versions) joined; mixes recorded with their contents' counts.
        let seen = Locked<(old: Int, new: Int, mixed: [String])>((0, 0, []))
        let stop = Locked(false)
        let newKeys = Set(staged.map(\.key))
        let group = DispatchGroup()
        // One reader per server: they list as fast as they can until the
        // end, so each one more is CPU the whole test long (four were 10 s).
        for reader in [store, other] {
            DispatchQueue.global().async(group: group) {
                while !stop.withLock({ $0 }) {
                    do {
                        let listed = try RestoreRig.list(reader, "r/")
                        let keys = listed.map { "\($0.key) \($0.metadata.version)" }
                        if keys == oldSet {
                            seen.withLock { $0.old += 1 }
                        } else if Set(listed.map(\.key)) == newKeys && listed.count == newKeys.count
                                    && listed.allSatisfy({ $0.metadata.size == UInt64("new value \(Int($0.key.dropFirst(2))!)".utf8.count) }) {
                            seen.withLock { $0.new += 1 }
                        } else {
                            seen.withLock { $0.mixed.append("\(listed.count) keys, \(listed.filter { newKeys.contains($0.key) }.count) new") }
                        }
                    } catch {
                        seen.withLock { $0.mixed.append("a listing failed: \(error)") }
                    }
                }
            }
        }
        let reply = restore.commit()
        let waiting = """
            SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%unnest%' AND backend_xid IS NOT NULL
            """
        try Poll.until(30, "the restore's transaction to wait on the session's row") { try !database.psql(waiting).isEmpty }
        // Held part way (two of three batches written): the readers go on.
        let oldBefore = seen.withLock { $0.old }
        try Poll.until(30, "readers to list while the restore is held part way") { seen.withLock { $0.old } >= oldBefore + 8 }
        blocker.send("ROLLBACK")
        #expect(try reply.get() == count)
        let newBefore = seen.withLock { $0.new }
        try Poll.until(30, "readers to list the new set") { seen.withLock { $0.new } >= newBefore + 8 }
        stop.withLock { $0 = true }
        group.wait()
        let result = seen.withLock { $0 }
        #expect(result.mixed.isEmpty, "\(result.mixed.prefix(5))")
        print("restore: readers listed the old set \(result.old) times and the new one \(result.new) times, a mix \(result.mixed.count) times")
    }

    /// A 30,000-line replace restore over 30,000 values: it commits (in
    /// batches inside its one transaction) and the time it takes is printed.
    @Test func aThirtyThousandValueReplaceRestoreCommits() throws {
        let database = try TestPostgres.makePrivate()
        let rig = try RestoreRig(database: database)
        let store = try rig.open()
        let count = 30_000
        let old = try store.beginRestore(under: StorePrefix(bytes: Array("big/".utf8)), replace: false)
        try RestoreRig.stage(old, (0..<count).map { (key: Self.key("big/old", $0), value: Array("old value \($0)".utf8)) })
        #expect(try old.commit().get() == count)
        let values = (0..<count).map { (key: Self.key("big/", $0), value: Array("{\"n\":\($0),\"name\":\"value \($0)\"}".utf8)) }
        let restore = try store.beginRestore(under: StorePrefix(bytes: Array("big/".utf8)), replace: true)
        let staging = ContinuousClock.now
        try RestoreRig.stage(restore, values)
        let committing = ContinuousClock.now
        #expect(try restore.commit().get() == count)
        let committed = ContinuousClock.now
        print("restore: 30,000 values staged in \(committing - staging), replace commit in \(committed - committing)")
        let listed = try RestoreRig.list(store, "big/")
        #expect(listed.count == count && listed.allSatisfy { !$0.key.hasPrefix("big/old") })
        #expect(try RestoreRig.read(store, Self.key("big/", 29_999)).1 == values[29_999].value)
        try Poll.until(10, "the totals to count the restore") { store.stats.keys == count }
    }
}
