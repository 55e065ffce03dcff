import Dispatch
import Foundation
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Writes to different keys commit side by side (each locks its own key),
/// so they may commit out of version order; every server's change feed
/// must still deliver every version once, in order, and the same sequence.
@Suite(.blockingLane, .serialized, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct PostgresFeedOrderTests {
    /// A transaction that took its version first and commits last holds
    /// back the changes after it, then comes out first: never skipped.
    @Test func aChangeCommittingAfterLaterOnesIsDeliveredBeforeThem() throws {
        let database = try TestPostgres.makePrivate()  // its open transaction would hold back other tests' feeds
        let schema = TestPostgres.makeSchemaName()
        let (a, b) = try PostgresSharingTests.twoServers(on: database, schema: schema)
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        let streams = try [SSEClient(port: a.port), SSEClient(port: b.port)]
        defer { streams.forEach { $0.close() } }
        for stream in streams { #expect(try stream.readHead() == 200) }

        // A writer as Larder's own: its change's version is its transaction's id over the base.
        let slow = try database.session()
        defer { slow.close() }
        slow.send("""
            BEGIN; INSERT INTO \(schema).larder_changes (version, kind, key, size)
              SELECT version_base + pg_current_xact_id()::text::int8 * 1024, 'put', 'slow/one', 1 FROM \(schema).larder_state
            """)
        slow.send("SELECT 'inserted'")
        try slow.wait(forLine: "inserted")

        var etags: [String] = []
        for i in 0..<4 {
            let server = i % 2 == 0 ? a : b
            etags.append(try #require(WireClient(port: server.port).put("fast/\(i)", "value \(i)").header("ETag")))
        }
        // Committed, acknowledged (each after waiting 2 s for this server's
        // feed to have it), and held back behind the open transaction.
        for stream in streams { #expect(try stream.events(1, timeout: 0.5).isEmpty) }

        slow.send("COMMIT")
        slow.send("SELECT 'committed'")
        try slow.wait(forLine: "committed")
        var sequences: [[String]] = []
        for stream in streams {
            let events = try stream.events(5, timeout: 30)
            #expect(events.map { $0.json?["key"] as? String } == ["slow/one"] + (0..<4).map { "fast/\($0)" })
            #expect(events.dropFirst().map { $0.json?["etag"] as? String } == etags)
            let ids = events.compactMap(\.id)
            #expect(ids == ids.sorted() && Set(ids).count == 5)
            sequences.append(ids)
        }
        #expect(sequences[0] == sequences[1])
    }

    /// 8 writers, 4 through each server, on keys of their own: each
    /// server's feed has every acknowledged write once, in increasing
    /// versions, in the same order as the other's.
    @Test func concurrentWritersThroughTwoServersMakeOneOrderedFeed() throws {
        let (a, b) = try PostgresSharingTests.twoServers(on: try TestPostgres.shared())
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        let streams = try [SSEClient(port: a.port), SSEClient(port: b.port)]
        defer { streams.forEach { $0.close() } }
        for stream in streams { #expect(try stream.readHead() == 200) }
        let writes = 25
        let acknowledged = Locked<[String: String]>([:])
        let failures = Locked<[String]>([])
        let ports = [a.port, b.port]
        DispatchQueue.concurrentPerform(iterations: 8) { w in
            let client = WireClient(port: ports[w % 2])
            for i in 0..<writes {
                let key = "writer\(w)/\(i % 3)"
                do {
                    let response = try client.put(key, "writer \(w) write \(i)")
                    guard response.status / 100 == 2, let etag = response.header("ETag") else {
                        failures.withLock { $0.append("\(key): \(response.status)") }
                        continue
                    }
                    acknowledged.withLock { $0[etag] = key }
                } catch {
                    failures.withLock { $0.append("\(key): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count == 8 * writes)
        var sequences: [[String]] = []
        for stream in streams {
            let events = try stream.events(8 * writes, timeout: 60)
            #expect(events.count == 8 * writes)
            var seen: [String: String] = [:]
            for event in events {
                if let etag = event.json?["etag"] as? String, let key = event.json?["key"] as? String { seen[etag] = key }
            }
            #expect(seen == acked)
            let ids = events.compactMap(\.id)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count)
            sequences.append(ids)
            // Nothing more: no change delivered twice.
            #expect(try stream.events(1, timeout: 0.3).isEmpty)
        }
        #expect(sequences[0] == sequences[1])
    }
}
