import Foundation
import LarderWire
import Testing
import LarderTestSupport

private typealias S = StoreTestSupport

/// API.md "Snapshots": a restore is all or nothing. A document with a bad
/// line anywhere is `400 invalid_snapshot` naming the line, the store is
/// exactly as it was (`replace=1` included), and watchers and the change
/// feed see nothing; a good document is seen whole. Runs on both stores
/// (`LARDER_TEST_STORE=postgres`, .ci/postgres-api).
@Suite(.blockingLane) struct SnapshotAllOrNothingTests {
    static func line(_ members: String) -> [UInt8] { Array(("{" + members + "}\n").utf8) }

    /// Five keys under `app/`, and what the listing says of them.
    static func fiveKeys(_ client: WireClient) throws -> [String: String] {
        var etags: [String: String] = [:]
        for i in 1...5 {
            let put = try client.put("app/\(i)", "value \(i)")
            #expect(put.status == 201)
            etags["app/\(i)"] = put.header("ETag")
        }
        return etags
    }

    /// A server with the five keys, and a change feed of `app/` open.
    static func fiveKeysWatched() throws -> (TestServer, [String: String], SSEClient) {
        let server = try TestServer()
        let etags = try fiveKeys(server.client())
        let feed = try SSEClient(port: server.port, target: "/events?prefix=app/")
        #expect(try feed.readHead() == 200)
        return (server, etags, feed)
    }

    static func expectUnchanged(_ client: WireClient, _ etags: [String: String],
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let keys = try client.list("app/").json?["keys"] as? [[String: Any]] ?? []
        #expect(keys.count == etags.count, "\(keys.map { $0["key"] ?? "?" })", sourceLocation: sourceLocation)
        for (key, etag) in etags {
            let got = try client.get(key)
            #expect(got.status == 200 && got.header("ETag") == etag, "\(key): \(got.status)", sourceLocation: sourceLocation)
            #expect(got.text == "value \(key.dropFirst(4))", sourceLocation: sourceLocation)
        }
    }

    /// The case a user reported: `replace=1` and a broken third line took
    /// away three of five keys; now nothing changes.
    @Test func aBrokenThirdLineWithReplaceLeavesThePrefixAsItWas() throws {
        let (server, etags, feed) = try Self.fiveKeysWatched()
        defer { server.stop(); feed.close() }
        let client = server.client()

        let document = Self.line(#""key":"app/new1","text":"n1""#) + Self.line(#""key":"app/new2","text":"n2""#)
            + Array(#"{"key":"app/new3","text":"#.utf8) + [0x0A] + Self.line(#""key":"app/new4","text":"n4""#)
        let response = try client.send("POST", "/snapshot?prefix=app/&replace=1", body: document)
        S.expectError(response, status: 400, code: "invalid_snapshot")
        let message = response.json?["message"] as? String ?? ""
        #expect(message.hasPrefix("line 3: "), "\(message)")
        #expect(message.contains("nothing was applied"), "\(message)")

        try Self.expectUnchanged(client, etags)
        for key in ["app/new1", "app/new2", "app/new4"] { #expect(try client.get(key).status == 404) }
        // The feed saw nothing of it: the next event is a write made after.
        #expect(try client.put("app/after", "a").status == 201)
        let next = try #require(try feed.nextEvent())
        #expect(next.event == "put" && next.json?["key"] as? String == "app/after", "\(next)")
    }

    /// Every kind of failure, first line to last, with and without
    /// `replace`: the store does not change.
    @Test(arguments: [false, true])
    func noBadDocumentChangesAnything(replace: Bool) throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1 << 20 }
        defer { server.stop() }
        let client = server.client()
        let etags = try Self.fiveKeys(client)
        let good = Self.line(#""key":"app/1","text":"replaced""#) + Self.line(#""key":"app/x","json":{"a":1}"#)
        // 900 KiB: under the 1 MiB value limit, and its line (1.2 MB of
        // base64) over the 1 MiB after which a line is streamed.
        let big = Data(Bytes.random(count: 900 << 10, seed: 6)).base64EncodedString()
        let over = Data(Bytes.random(count: (1 << 20) + 1, seed: 1)).base64EncodedString()
        let documents: [(String, [UInt8], Int)] = [
            ("first line bad", Array("nope\n".utf8) + good, 400),
            ("last line bad", good + Self.line(#""key":"app/y","base64":"!!""#), 400),
            ("key outside the prefix", good + Self.line(#""key":"other/y","text":"y""#), 400),
            ("bad content type", good + Self.line(#""key":"app/y","contentType":"a\u0001","text":"y""#), 400),
            ("ends inside a line", good + Array(#"{"key":"app/y","text":"#.utf8), 400),
            ("value over the limit", good + Self.line(#""key":"app/y","base64":"\#(over)""#), 413),
            // A long line is streamed into the staging spool; the line after it is bad.
            ("bad after a streamed value", good + Self.line(#""key":"app/big","base64":"\#(big)""#) + Array("[]\n".utf8), 400),
            ("streamed value cut short", good + Array(#"{"key":"app/big","base64":"\#(big)"#.utf8), 400),
        ]
        for (what, document, status) in documents {
            let response = try client.send("POST", "/snapshot?prefix=app/" + (replace ? "&replace=1" : ""), body: document)
            #expect(response.status == status, "\(what): \(response.status) \(response.text)")
            #expect((response.json?["message"] as? String)?.contains("nothing was applied") == true, "\(what): \(response.text)")
            try Self.expectUnchanged(client, etags)
            #expect(try client.get("app/x").status == 404, "\(what)")
            #expect(try client.get("app/big").status == 404, "\(what)")
        }
    }

    /// A good document is applied whole: `replace` clears the prefix, then
    /// every line is written; the feed shows the bulk delete, then each put;
    /// a watcher on a replaced key wakes with the restored value.
    @Test func aGoodDocumentIsAppliedWholeAndSeenWhole() throws {
        let (server, etags, feed) = try Self.fiveKeysWatched()
        defer { server.stop(); feed.close() }
        let client = server.client()
        // A watcher on app/1: the semaphore orders its write before the read below.
        let watched = WatchResult()
        let done = DispatchSemaphore(value: 0)
        let etag1 = etags["app/1"]!, port = server.port
        Thread.detachNewThread {
            watched.response = try? WireClient(port: port).send("GET", "/store/app/1?wait=20", headers: [("If-None-Match", etag1)])
            done.signal()
        }
        usleep(300_000)

        let big = Bytes.random(count: 5 << 20, seed: 8)
        let document = Self.line(#""key":"app/1","text":"one again""#)
            + Self.line(#""key":"app/big","contentType":"application/x-blob","base64":"\#(Data(big).base64EncodedString())""#)
            + Self.line(#""key":"app/1","text":"one last""#)
            + Self.line(#""key":"app/old","expires":"2001-01-01T00:00:00Z","text":"gone""#)
            + Self.line(#""key":"app/j","contentType":"application/json","json":{"b":[1,2]}"#)
        let response = try client.send("POST", "/snapshot?prefix=app/&replace=1", body: document)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.json?["restored"] as? Int == 4)
        #expect(response.json?["skipped"] as? Int == 1)

        let keys = (try client.list("app/").json?["keys"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
        #expect(keys == ["app/1", "app/big", "app/j"])
        let restoredOne = try client.get("app/1")
        #expect(restoredOne.text == "one last", "a key named twice ends as its last line says")
        let restored = try client.get("app/big")
        #expect(restored.header("Content-Type") == "application/x-blob" && S.same(restored.body, big))
        #expect(try client.get("app/j").text == #"{"b":[1,2]}"#)

        // One event per key restored, with its final value: the document's
        // first value of app/1 was never in the store, so no one hears of it.
        let events = try feed.events(4)
        #expect(events.first?.event == "delete" && events.first?.json?["deleted"] as? Int == 5, "\(events)")
        // (In no set order: the restore publishes them in one step.)
        #expect(events.dropFirst().map { "\($0.event) \($0.json?["key"] as? String ?? "?")" }.sorted()
                == ["put app/1", "put app/big", "put app/j"], "\(events)")
        let tag = restoredOne.header("ETag") ?? ""
        let one = events.first { $0.json?["key"] as? String == "app/1" }
        #expect([tag, tag.replacingOccurrences(of: "\"", with: "")].contains(one?.json?["etag"] as? String ?? "-"),
                "the event of app/1 names its last value: \(String(describing: one))")
        #expect(done.wait(timeout: .now() + 20) == .success)
        let woke = watched.response
        #expect(woke?.status == 200 || woke?.status == 404, "the watcher woke: \(String(describing: woke?.status))")
    }

    /// Staging keeps memory flat: a document of 48 MiB of values (one
    /// 40 MiB value streamed, 400 lines of 20 KiB) goes through a spool
    /// file, not the server's memory, and the restore's bad last line
    /// still leaves nothing behind; then the same document, good, restores.
    @Test func stagingALargeDocumentStaysInBoundedMemory() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        let big = Bytes.random(count: 40 << 20, seed: 40)
        var document = Self.line(#""key":"m/big","base64":"\#(Data(big).base64EncodedString())""#)
        let small = Data(Bytes.random(count: 20 << 10, seed: 2)).base64EncodedString()
        for i in 0..<400 { document += Self.line(#""key":"m/\#(i)","base64":"\#(small)""#) }
        let baseline = try #require(child.rssKiB())
        for (broken, status) in [(true, 400), (false, 200)] {
            let body = broken ? document + Array("broken\n".utf8) : document
            let connection = try HTTPClientConnection(port: child.port, timeout: 120)
            try connection.send("POST /snapshot?prefix=m/ HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n")
            var peak = baseline
            var offset = 0
            while offset < body.count {
                let end = min(offset + (1 << 20), body.count)
                try connection.send(Array(body[offset..<end]))
                offset = end
                peak = max(peak, child.rssKiB() ?? 0)
            }
            let response = try connection.readResponse()
            peak = max(peak, child.rssKiB() ?? 0)
            #expect(response.status == status, "\(response.text)")
            #expect(peak - baseline < 40 * 1024, "server RSS grew by \(peak - baseline) KiB staging a \(body.count >> 20) MiB document")
            let listed = try child.client().list("m/").json?["keys"] as? [[String: Any]] ?? []
            #expect(listed.count == (broken ? 0 : 401))
        }
        #expect(Bytes.crc32(try child.client().get("m/big").body) == Bytes.crc32(big))
    }
}

private final class WatchResult: @unchecked Sendable {
    var response: ClientResponse?
}
