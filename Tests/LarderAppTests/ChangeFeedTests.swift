import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// `GET /events?prefix=`: the change feed as Server-Sent Events. Each test
/// has a server of its own; the stalled-reader test prints its PUT timings
/// and asserts none, so the suite runs in parallel.
@Suite(.blockingLane) struct ChangeFeedTests {
    /// Opens a feed and reads its head; the subscription exists once the head arrived.
    static func subscribe(_ server: TestServer, prefix: String, headers: [(String, String)] = [],
                          query: String = "") throws -> SSEClient {
        let reader = try SSEClient(port: server.port, target: "/events?prefix=" + S.encodeQuery(prefix) + query, headers: headers)
        let status = try reader.readHead()
        #expect(status == 200, "GET /events answered \(status)")
        return reader
    }

    static func isEventID(_ id: String?) -> Bool {
        guard let id, id.count == 16 else { return false }
        return id.allSatisfy { $0.isHexDigit }
    }

    /// `(event, key-or-prefix)` for compact comparisons.
    static func summary(_ events: [SSEEvent]) -> [String] {
        events.map { e in
            let json = e.json ?? [:]
            if let key = json["key"] as? String { return "\(e.event) \(key)" }
            return "\(e.event) prefix=\(json["prefix"] as? String ?? "?") deleted=\(json["deleted"] as? Int ?? -1)"
        }
    }

    // MARK: - Tests

    @Test func putDeleteExpireArriveInOrderWithIDsAndData() throws {
        let server = try TestServer()
        let client = server.client()
        let reader = try SSEClient(port: server.port, target: "/events?prefix=feed/")
        #expect(try reader.readHead() == 200)
        #expect(reader.header("Content-Type")?.hasPrefix("text/event-stream") == true,
                "Content-Type: \(reader.header("Content-Type") ?? "missing")")
        #expect(reader.header("Transfer-Encoding")?.lowercased() == "chunked")

        let put = try client.put("feed/a", "hello")
        #expect(try client.put("elsewhere/x", "not for this feed").status == 201)
        #expect(try client.delete("feed/a").status == 204)
        let ttlPut = try client.send("PUT", "/store/feed/t?ttl=1", body: Array("tt".utf8))
        #expect(ttlPut.status == 201)

        let events = try reader.events(4, timeout: 6)
        #expect(Self.summary(events) == ["put feed/a", "delete feed/a", "put feed/t", "expire feed/t"], "\(events)")
        #expect(reader.comments.contains("larder change feed"), "comments: \(reader.comments)")
        guard events.count == 4 else { return }
        // ids: 16 hex digits, unique and increasing.
        for e in events { #expect(Self.isEventID(e.id), "id \(e.id ?? "missing")") }
        let ids = events.compactMap(\.id)
        #expect(ids == ids.sorted() && Set(ids).count == ids.count, "ids \(ids)")
        // put: key, the value's ETag and size.
        let p = events[0].json ?? [:]
        #expect(p["key"] as? String == "feed/a")
        #expect(p["etag"] as? String == put.header("ETag"), "put data \(events[0].data) vs ETag \(put.header("ETag") ?? "-")")
        #expect(p["size"] as? Int == 5)
        let t = events[2].json ?? [:]
        #expect(t["etag"] as? String == ttlPut.header("ETag"))
        #expect(t["size"] as? Int == 2)
        // delete and expire name the key and the ETag of the version they
        // removed (API.md), and no size: nothing is there any more.
        #expect(events[1].json?["key"] as? String == "feed/a", "\(events[1].data)")
        #expect(events[1].json?["etag"] as? String == put.header("ETag"), "delete data \(events[1].data)")
        #expect(events[1].json?["size"] == nil, "delete data \(events[1].data)")
        #expect(events[3].json?["key"] as? String == "feed/t", "\(events[3].data)")
        #expect(events[3].json?["etag"] as? String == ttlPut.header("ETag"), "expire data \(events[3].data)")
        #expect(events[3].json?["size"] == nil, "expire data \(events[3].data)")
        // Nothing for the other prefix follows.
        let extra = try reader.nextEvent(timeout: 0.3)
        #expect(extra == nil, "unexpected \(String(describing: extra))")
    }

    @Test func prefixFilterDeliversOnlyMatchingKeys() throws {
        let server = try TestServer()
        let client = server.client()
        let a = try Self.subscribe(server, prefix: "a/")
        let b = try Self.subscribe(server, prefix: "b/")
        let all = try Self.subscribe(server, prefix: "")
        for key in ["a/1", "b/1", "ab/1", "a/2", "c/1", "a/deep/3"] { #expect(try client.put(key, key).status == 201) }
        #expect(Self.summary(try a.events(3)) == ["put a/1", "put a/2", "put a/deep/3"])
        #expect(Self.summary(try b.events(1)) == ["put b/1"])
        #expect(Self.summary(try all.events(6)) == ["put a/1", "put b/1", "put ab/1", "put a/2", "put c/1", "put a/deep/3"])
        #expect(try a.nextEvent(timeout: 0.2) == nil)
        #expect(try b.nextEvent(timeout: 0.05) == nil)
    }

    @Test func bulkDeleteIsOneEventForEveryOverlappingPrefix() throws {
        let server = try TestServer()
        let client = server.client()
        for key in ["bulk/sub/1", "bulk/sub/2", "bulk/sub/deep/3", "bulk/x"] { #expect(try client.put(key, "v").status == 201) }
        let parent = try Self.subscribe(server, prefix: "bulk/")
        let child = try Self.subscribe(server, prefix: "bulk/sub/")
        let grandchild = try Self.subscribe(server, prefix: "bulk/sub/deep/")
        let sibling = try Self.subscribe(server, prefix: "bulk/other/")
        let unrelated = try Self.subscribe(server, prefix: "other/")

        let deleted = try client.deletePrefix("bulk/sub/")
        #expect(deleted.status == 200)
        #expect(deleted.json?["deleted"] as? Int == 3)
        // A marker write: the next event after the bulk delete must be it, not per-key deletes.
        #expect(try client.put("bulk/sub/marker", "m").status == 201)
        let everything = try client.deletePrefix("")
        #expect(everything.json?["deleted"] as? Int == 2)

        let under = ["delete prefix=bulk/sub/ deleted=3", "put bulk/sub/marker", "delete prefix= deleted=2"]
        let parentEvents = try parent.events(3)
        #expect(Self.summary(parentEvents) == under, "parent bulk/: \(parentEvents)")
        #expect(Self.summary(try child.events(3)) == under, "child bulk/sub/")
        #expect(Self.summary(try grandchild.events(2)) == ["delete prefix=bulk/sub/ deleted=3", "delete prefix= deleted=2"],
                "grandchild bulk/sub/deep/")
        #expect(Self.summary(try sibling.events(1)) == ["delete prefix= deleted=2"], "sibling bulk/other/")
        #expect(Self.summary(try unrelated.events(1)) == ["delete prefix= deleted=2"], "unrelated other/")
        // The data is exactly {"prefix":…,"deleted":N}, no key.
        if let first = parentEvents.first {
            #expect(first.event == "delete")
            #expect(first.json?["key"] == nil, "\(first.data)")
            #expect(Set(first.json?.keys.map { $0 } ?? []) == ["prefix", "deleted"], "\(first.data)")
            #expect(Self.isEventID(first.id))
        }
        for reader in [parent, child, grandchild, sibling, unrelated] { #expect(try reader.nextEvent(timeout: 0.1) == nil) }
    }

    @Test func reconnectWithLastEventIDReplaysExactlyTheLaterEvents() throws {
        let server = try TestServer()
        let client = server.client()
        let first = try Self.subscribe(server, prefix: "re/")
        var tags: [String] = []
        for i in 1...5 {
            #expect(try client.put("other/\(i)", "noise").status == 201)
            tags.append(try client.put("re/\(i)", "value \(i)").header("ETag") ?? "")
        }
        let seen = try first.events(5)
        #expect(Self.summary(seen) == (1...5).map { "put re/\($0)" })
        guard seen.count == 5, let secondID = seen[1].id else { return }
        first.close()

        // Header form.
        let again = try Self.subscribe(server, prefix: "re/", headers: [("Last-Event-ID", secondID)])
        let replayed = try again.events(3)
        #expect(replayed == Array(seen[2...]), "replayed \(replayed), want \(Array(seen[2...]))")
        // Then live events, with none repeated.
        #expect(try client.put("re/6", "value 6").status == 201)
        let live = try again.nextEvent()
        #expect(live.map { Self.summary([$0]) } == ["put re/6"], "after the replay: \(String(describing: live))")
        #expect(try again.nextEvent(timeout: 0.2) == nil)

        // Query form (for EventSource, which cannot set headers), from the 4th.
        let byQuery = try Self.subscribe(server, prefix: "re/", query: "&lastEventId=" + (seen[3].id ?? ""))
        let fromQuery = try byQuery.events(2)
        #expect(Self.summary(fromQuery) == ["put re/5", "put re/6"])
        #expect(fromQuery.first == seen[4])
        // Without Last-Event-ID: live events only.
        let fresh = try Self.subscribe(server, prefix: "re/")
        #expect(try fresh.nextEvent(timeout: 0.2) == nil, "a new subscriber without Last-Event-ID got a replay")
    }

    /// An id older than the history (`--event-history`) gets a `reset`
    /// event, whose id is the newest change's, then live events: a mirror
    /// lists again instead of missing what fell out.
    @Test func anIDOlderThanTheHistoryGetsAResetThenLiveEvents() throws {
        let server = try TestServer { $0.eventHistory = 3 }
        let client = server.client()
        let first = try Self.subscribe(server, prefix: "old/")
        for i in 1...6 { #expect(try client.put("old/\(i)", "value \(i)").status == 201) }
        let seen = try first.events(6)
        first.close()
        guard seen.count == 6, let oldest = seen[0].id, let newest = seen[5].id else { return }

        let behind = try Self.subscribe(server, prefix: "old/", headers: [("Last-Event-ID", oldest)])
        let reset = try behind.nextEvent()
        #expect(reset?.event == "reset")
        #expect(reset?.id == newest)
        #expect(reset?.data == "{}")
        #expect(try behind.nextEvent(timeout: 0.2) == nil, "a replay came after the reset")
        #expect(try client.put("old/7", "value 7").status == 201)
        #expect(try behind.nextEvent().map { Self.summary([$0]) } == ["put old/7"])

        // Within the history, or at its newest: no reset.
        let within = try Self.subscribe(server, prefix: "old/", headers: [("Last-Event-ID", newest)])
        #expect(try within.nextEvent().map { Self.summary([$0]) } == ["put old/7"])
        #expect(try within.nextEvent(timeout: 0.2) == nil)
    }

    @Test func heartbeatCommentsArrive() throws {
        let server = try TestServer { $0.eventHeartbeat = 0.2 }
        let reader = try Self.subscribe(server, prefix: "hb/")
        var skipped: [SSEEvent] = []
        // No wall-clock bound (a loaded machine stretches any): at the
        // default heartbeat (15 s) none of these would come within the
        // generous waits, at 0.2 s they all do.
        #expect(try reader.waitForComment("keep-alive", timeout: 10, skipped: &skipped), "no keep-alive: \(reader.comments)")
        // More keep-alives follow, and events still pass between them.
        #expect(try server.client().put("hb/k", "v").status == 201)
        let event = try reader.nextEvent(timeout: 10)
        #expect(event?.event == "put")
        #expect(try reader.waitForComments("keep-alive", count: 3, timeout: 10, skipped: &skipped),
                "\(reader.comments.filter { $0 == "keep-alive" }.count) keep-alives")
        #expect(skipped.isEmpty)
    }

    /// `count` PUTs of ~1 KiB on one keep-alive connection; seconds taken.
    static func timedPuts(_ client: WireClient, _ keyPrefix: String, count: Int) throws -> (seconds: Double, failures: Int) {
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
        var failures = 0
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<count {
            let status = try client.send("PUT", "/store/" + keyPrefix + String(i), body: body).status
            if status != 201 { failures += 1 }
        }
        return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, failures)
    }

    @Test(.diskStoreOnly("the server's event buffer, the same on every store; its 8,000 PUTs were 45 s of the PostgreSQL run")) func aStalledReaderDoesNotSlowWriters() throws {
        let server = try TestServer { $0.eventBufferBytes = 64 << 10 }
        let client = server.client()
        _ = try Self.timedPuts(client, "warmup/", count: 200)
        let before = try Self.timedPuts(client, "base1/", count: 2000)

        // A reader with a tiny receive buffer that never reads, subscribed to everything.
        var stalled: SSEClient? = try SSEClient(port: server.port, target: "/events?prefix=", receiveBuffer: 4096)
        #expect(Poll.holds(within: Poll.patience) { server.server.eventStreamCount == 1 }, "the stalled reader never subscribed")
        let stalledRun = try Self.timedPuts(client, "stall/", count: 2000)
        let after = try Self.timedPuts(client, "base2/", count: 2000)
        let baseline = (before.seconds + after.seconds) / 2
        print(String(format: "ChangeFeedTests: 2000 PUTs of 1 KiB: no subscriber %.3f s / %.3f s, with a stalled reader %.3f s (ratio %.2f)",
                     before.seconds, after.seconds, stalledRun.seconds, stalledRun.seconds / baseline))
        #expect(before.failures == 0 && stalledRun.failures == 0 && after.failures == 0)
        // A writer that waited on the stalled stream would hang outright (its
        // buffer is full after a few hundred events), and the client's socket
        // timeout would count it a failure; the ratio is a printed figure.

        // The stalled reader goes away (hangs up with unread data): its stream is unsubscribed.
        stalled = nil
        #expect(Poll.holds(within: Poll.patience) { server.server.eventStreamCount == 0 },
                "the dropped reader is still subscribed (eventStreamCount \(server.server.eventStreamCount))")
        #expect(try client.put("stall/after", "ok").status == 201)
        _ = stalled
    }

    /// The bound on how far a reader may fall behind: `eventBufferBytes` of
    /// the server's own buffer plus what the kernel's socket send buffer
    /// holds (at most `tcp_wmem`'s maximum). Past it the reader gets a last
    /// `dropped` event and the stream ends; what it got before is in order.
    @Test(.diskStoreOnly("the server's event buffer, the same on every store; its 8,000 PUTs were 45 s of the PostgreSQL run")) func aReaderFarBehindIsDroppedWithADroppedEvent() throws {
        let server = try TestServer { $0.eventBufferBytes = 64 << 10 }
        let client = server.client()
        let stalled = try SSEClient(port: server.port, target: "/events?prefix=big/", receiveBuffer: 4096)
        #expect(try stalled.readHead() == 200)
        #expect(Poll.holds(within: Poll.patience) { server.server.eventStreamCount == 1 })
        let wmem = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8))?
            .split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }.last ?? (4 << 20)
        let bound = (64 << 10) + wmem + (1 << 20)  // + 1 MiB for chunk framing and slack
        // ~1 KiB events: keys near the 1024-byte limit (segments of at most 255 bytes), tiny values.
        let padding = Array(repeating: String(repeating: "k", count: 240), count: 4).joined(separator: "/")
        var sent = 0, eventBytes = 0
        while server.server.eventStreamCount > 0 && eventBytes < bound {
            let key = "big/\(padding)/\(sent)"
            let put = try client.send("PUT", "/store/" + key, body: Array("v".utf8))
            guard put.status == 201 else { Issue.record("PUT \(sent): \(put.status) \(put.text)"); break }
            sent += 1
            eventBytes += key.utf8.count + 80
        }
        #expect(Poll.holds(within: Poll.patience) { server.server.eventStreamCount == 0 },
                "a reader \(eventBytes) bytes behind (eventBufferBytes 64 KiB, tcp_wmem max \(wmem)) was never dropped")
        print("ChangeFeedTests: the stalled reader was dropped after \(sent) events (~\(eventBytes / 1024) KiB) with eventBufferBytes 64 KiB, tcp_wmem max \(wmem / 1024) KiB")

        // Reading now: the events it had, in order, then `dropped`, then the end.
        var events: [SSEEvent] = []
        while let event = try stalled.nextEvent(timeout: 3) { events.append(event) }
        #expect(stalled.ended, "the dropped reader's stream did not end")
        #expect(events.last?.event == "dropped", "last event: \(String(describing: events.last)) after \(events.count)")
        let puts = events.filter { $0.event == "put" }
        #expect(puts.count < sent, "the dropped reader got all \(sent) events")
        #expect(puts.enumerated().allSatisfy { $0.element.json?["key"] as? String == "big/\(padding)/\($0.offset)" },
                "the events before the drop are not the first ones in order")
        #expect(events.filter { $0.event == "dropped" }.count == 1)
        // The server is fine: a new reader works.
        let fresh = try Self.subscribe(server, prefix: "after/")
        #expect(try client.put("after/1", "ok").status == 201)
        #expect(Self.summary(try fresh.events(1)) == ["put after/1"])
    }

    @Test func tenReadersReceiveTheSameTwoHundredEvents() throws {
        let server = try TestServer()
        let client = server.client()
        var readers: [SSEClient] = []
        for _ in 0..<10 { readers.append(try Self.subscribe(server, prefix: "ten/")) }
        #expect(server.server.eventStreamCount == 10)
        var tags: [String] = []
        for i in 0..<200 {
            let put = try client.put("ten/\(i)", "value \(i)")
            #expect(put.status == 201)
            tags.append(put.header("ETag") ?? "")
        }
        let reference = try readers[0].events(200)
        #expect(reference.count == 200)
        #expect(reference.map { $0.json?["key"] as? String ?? "?" } == (0..<200).map { "ten/\($0)" })
        #expect(reference.map { $0.json?["etag"] as? String ?? "?" } == tags)
        #expect(Set(reference.compactMap(\.id)).count == 200, "ids are not unique")
        for (n, reader) in readers.enumerated().dropFirst() {
            let got = try reader.events(200)
            #expect(got == reference, "reader \(n) got \(got.count) events, first difference at \(zip(got, reference).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, 200))")
        }
        // Closing the readers unsubscribes them.
        for reader in readers { reader.close() }
        #expect(Poll.holds(within: Poll.patience) { server.server.eventStreamCount == 0 },
                "\(server.server.eventStreamCount) streams still open after their readers closed")
    }
}
