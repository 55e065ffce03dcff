import Foundation
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--pg-cache-mb`: small values read lately are answered from memory,
/// and the change feed keeps them honest. A server reads its own writes; a
/// write through another server replaces the cached value once the feed
/// brings it; while the feed is held back, or cannot read at all, reads go
/// to the database again.
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct PostgresReadCacheTests {
    static let cached = ["--pg-cache-mb", "8"]

    @Test func aServerReadsItsOwnWritesThroughItsCache() throws {
        let (a, b) = try PostgresSharingTests.twoServers(on: try TestPostgres.shared(), extra: Self.cached)
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        let mine = a.client(), theirs = b.client()
        for i in 0..<150 {
            #expect(try mine.put("mine", "v\(i)").status / 100 == 2)
            // The second read is a hit (the first may be too: the value was read, then replaced).
            for _ in 0..<2 { #expect(try mine.get("mine").text == "v\(i)") }
            #expect(try theirs.put("theirs/\(i % 5)", "x").status / 100 == 2)
            if i % 10 == 9 {
                #expect(try mine.delete("mine").status == 204)
                #expect(try mine.get("mine").status == 404)
            }
        }
    }

    /// Each server caches the key, the other replaces it: the new value is
    /// read on the first within moments (the feed's delay), never the old
    /// one for long.
    @Test func aWriteThroughAnotherServerReplacesTheCachedValue() throws {
        let (a, b) = try PostgresSharingTests.twoServers(on: try TestPostgres.shared(), extra: Self.cached)
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        let clients = [a.client(), b.client()]
        var lags: [Duration] = []
        for i in 0..<40 {
            let (reader, writer) = (clients[i % 2], clients[(i + 1) % 2])
            for _ in 0..<2 { _ = try reader.get("shared") }
            #expect(try writer.put("shared", "v\(i)").status / 100 == 2)
            let written = ContinuousClock.now
            try Poll.until(5, "the other server to read v\(i)") { try reader.get("shared").text == "v\(i)" }
            lags.append(ContinuousClock.now - written)
        }
        lags.sort()
        print("read cache: a write through one server was read through the other after \(lags[lags.count / 2]) (median), \(lags.last!) (slowest)")
    }

    /// A transaction open on the database holds the feed back: a write
    /// through the other server commits but cannot be delivered, so the
    /// cache cannot be vouched for and reads ask the database.
    @Test func whileTheFeedIsHeldBackReadsAskTheDatabase() throws {
        let database = try TestPostgres.makePrivate()  // its open transaction would hold back other tests' feeds
        let (a, b) = try PostgresSharingTests.twoServers(on: database, extra: Self.cached)
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        #expect(try a.client().put("held", "old").status / 100 == 2)
        for _ in 0..<2 { #expect(try a.client().get("held").text == "old") }

        let open = try database.session()
        defer { open.close() }
        try open.beginHoldingFeedsBack()
        // Acknowledged once committed (after waiting 2 s for its own feed, held back too).
        #expect(try b.client().put("held", "new").status / 100 == 2)
        #expect(try a.client().get("held").text == "new", "a cached value was served while the feed could not vouch for it")
        open.send("COMMIT")
    }

    /// A database that stops answering (every process stopped, nothing
    /// closed): cached values are served for at most about 2 s after the
    /// feed's last read, then reads go to the database and get 503 within
    /// `--pg-timeout`; when it answers again, so does the server.
    @Test func aFrozenDatabaseEndsCachedReadsWithinTwoSeconds() throws {
        let database = try TestPostgres.makePrivate()
        let server = try ChildServer(dataDirectory: nil, arguments: [
            "--store", database.url(schema: TestPostgres.makeSchemaName()), "--pg-pool", "4", "--pg-timeout", "1",
            "--log-level", "warning",
        ] + Self.cached)
        defer { server.kill(SIGTERM) }
        let client = server.client()
        #expect(try client.put("frozen", "v").status / 100 == 2)
        for _ in 0..<2 { #expect(try client.get("frozen").text == "v") }
        // A write makes the feed read (a clean read, just now).
        #expect(try client.put("other", "x").status / 100 == 2)

        try database.freeze()
        defer { try? database.thaw() }
        let frozen = ContinuousClock.now
        let hit = try client.get("frozen")
        // The value itself: a read that went to the frozen database would be a 503.
        #expect(hit.status == 200 && hit.text == "v", "\(hit.status) \(hit.text)")

        usleep(UInt32(max(0, 3 - (ContinuousClock.now - frozen) / .seconds(1)) * 1_000_000))
        // An answer at all (the client's socket timeout ends a read the server holds): the 503 of --pg-timeout.
        let asked = ContinuousClock.now
        let miss = try client.get("frozen")
        let took = ContinuousClock.now - asked
        #expect(miss.status == 503 && miss.json?["error"] as? String == "backend_unavailable", "\(miss.status) \(miss.text)")

        try database.thaw()
        try Poll.until(30, "reads to come back after the thaw") { try client.get("frozen").text == "v" }
        print("read cache: frozen database: cached read served at once, a read 3 s later answered 503 in \(took)")
    }

    /// 8 clients through one caching server: reads, writes,
    /// compare-and-swap, appends and deletes on 3 keys stay linearizable.
    @Test func aHistoryThroughOneCachingServerIsLinearizable() async throws {
        let database = try TestPostgres.shared()
        let server = try ChildServer(dataDirectory: nil, arguments: [
            "--store", database.url(schema: TestPostgres.makeSchemaName()), "--pg-pool", "4", "--log-level", "warning",
        ] + Self.cached)
        defer { server.kill(SIGTERM) }
        let history = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: history) }
        let result = try await PythonRunner.run([
            Repository.path("Tests/cluster/record_history.py"), "--url", "http://127.0.0.1:\(server.port)", "--clients", "8",
            "--keys", "3", "--seconds", "4", "--out", history, "--check", "--check-timeout", "120",
        ], timeout: 240)
        print("read cache history: \(result.stderr.split(separator: "\n").suffix(3).joined(separator: " | ")) \(result.stdout)")
        #expect(!result.timedOut)
        #expect(result.status == 0, "not linearizable, or not checked: \(result.stdout) \(result.stderr)")
    }
}
