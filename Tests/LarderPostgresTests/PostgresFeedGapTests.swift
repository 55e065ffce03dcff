import Foundation
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The database keeps the last `--event-history` changes. A server whose
/// feed falls further behind than that (held back by a transaction open on
/// the database while others write, or cut off from it) cannot deliver what
/// was trimmed: it says so with a `reset` on every event stream, in place
/// of the first change it can deliver, drops every value it cached, and
/// goes on from there.
@Suite(.longBlockingLane, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct PostgresFeedGapTests {
    static let history = 20

    @Test func aFeedThatFellBehindTheTrimSaysResetAndDropsItsCache() throws {
        // A server of its own: the transaction it holds open would hold back every
        // other test's change feeds on a shared one (the mark is the whole server's).
        let database = try TestPostgres.makePrivate()
        let schema = TestPostgres.makeSchemaName()
        let (a, b) = try PostgresSharingTests.twoServers(on: database, schema: schema, extra: [
            "--event-history", "\(Self.history)", "--pg-cache-mb", "8",
        ])
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        #expect(try a.client().put("cached", "old").status / 100 == 2)
        for _ in 0..<2 { #expect(try a.client().get("cached").text == "old") }
        let stream = try SSEClient(port: a.port)
        defer { stream.close() }
        #expect(try stream.readHead() == 200)
        let before = try #require(try a.client().put("before", "x").header("ETag"))
        let first = try #require(try stream.nextEvent())
        #expect(first.json?["key"] as? String == "before")

        // A transaction open on the database holds every feed back.
        let open = try database.session()
        defer { open.close() }
        try open.beginHoldingFeedsBack()
        // Meanwhile the other server writes three histories' worth, the
        // cached key first (each write waits up to 2 s for its own feed,
        // so they go at once).
        #expect(try b.client().put("cached", "new").status / 100 == 2)
        let bPort = b.port
        let writers = (0..<3 * Self.history).map { i in
            Thread { _ = try? WireClient(port: bPort).put("during/\(i)", "x") }
        }
        for thread in writers { thread.start() }
        while writers.contains(where: { !$0.isFinished }) { usleep(10_000) }
        // A sweep trims what is past the history (every 10 s on each
        // server): all of it, once one ran after the last write.
        try Poll.until(40, "a sweep to trim the changes past the history") {
            try database.psql("SELECT count(*) FROM \(schema).larder_changes") == "\(Self.history)"
        }
        #expect(try database.psql("SELECT count(*) FROM \(schema).larder_changes WHERE key = 'cached'") == "0")
        open.send("COMMIT")

        // The stream says reset, with an id to resume after, then goes on.
        let reset = try #require(try stream.nextEvent(timeout: 15), "no event after the held-back feed resumed")
        #expect(reset.event == "reset", "\(reset)")
        let resetID = try #require(reset.id)
        // Resuming after the reset's id (while the server's history still
        // holds it: it keeps --event-history changes too) is a replay.
        let resumed = try SSEClient(port: a.port, headers: [("Last-Event-ID", resetID)])
        defer { resumed.close() }
        #expect(try resumed.readHead() == 200)
        let replayed = try #require(try resumed.nextEvent())
        #expect(replayed.event == "put", "\(replayed)")
        #expect(try a.client().put("after", "y").status / 100 == 2)
        var later: [SSEEvent] = []
        try Poll.until(15, "the write after the reset on the stream") {
            later += try stream.events(1, timeout: 0.5)
            return later.contains { $0.json?["key"] as? String == "after" }
        }
        #expect(!later.contains { $0.event == "reset" }, "a second reset: \(later)")

        // The value cached before the gap is not served: its change was trimmed unread.
        #expect(try a.client().get("cached").text == "new", "a value cached before the gap was served after it")

        // Resuming after an id from before the gap is a reset.
        let old = try SSEClient(port: a.port, headers: [("Last-Event-ID", before.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))])
        defer { old.close() }
        #expect(try old.readHead() == 200)
        #expect(try old.nextEvent()?.event == "reset")
    }
}
