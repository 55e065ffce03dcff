import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What happens after a watch is answered: a late answer keeps its keep-alive
/// connection usable, answered watches let go of their watcher, connection
/// and memory, and an answer held back by a fault delay is not replaced by
/// the watch's deadline. Serialized: memory and timing bounds.
@Suite(.longBlockingLane, .serialized) struct WatchAnswerTests {
    /// Before: a connection's clock was read only on its own socket and timer
    /// events, so a watch answered later sent its answer with a stale time
    /// as the last activity. Here the last such event is the idle timer at
    /// ~1 s (it finds the watch parked); the PUT comes at ~2.6 s, past that
    /// stale time plus the 1 s idle timeout, and the keep-alive connection
    /// was closed at once instead of waiting for the next request.
    @Test func keepAliveConnectionSurvivesALateWatchAnswer() throws {
        let server = try TestServer { $0.http.idleTimeout = 1 }
        defer { server.stop() }
        let setup = try server.connection(timeout: 10)
        let first = try setup.request("PUT", "/store/stale", body: Array("1".utf8))
        #expect(first.status == 201)
        let etag = try #require(first.header("ETag"))

        let watcher = try server.connection(timeout: 10)
        let sent = Date()
        try watcher.send(WatchTests.watchRequest("/store/stale?wait=300", etag: etag))
        #expect(WatchTests.waitForWatchers(server, 1), "the watch never registered")
        usleep(UInt32(max(0, 2.6 - Date().timeIntervalSince(sent)) * 1e6))
        // A fresh connection: the first one has been idle longer than the timeout.
        #expect(try server.connection(timeout: 10).request("PUT", "/store/stale", body: Array("2".utf8)).status == 204)

        let answer = try watcher.readResponse()
        #expect(answer.status == 200, "watch: \(answer.status) \(answer.text)")
        #expect(answer.text == "2")
        #expect(answer.header("Connection")?.lowercased() != "close")
        let elapsed = Date().timeIntervalSince(sent)
        // Answered by the PUT (the value, not a 304 at a deadline), after the
        // connection had been silent longer than the idle timeout.
        #expect(elapsed > 2.4, "the watch was answered after \(elapsed) s, before the PUT at ~2.6 s")

        usleep(200_000)
        let next: ClientResponse
        do {
            next = try watcher.request("GET", "/store/stale")
        } catch {
            Issue.record("a request 0.2 s after the watch answer on the same keep-alive connection got no answer: \(error)")
            return
        }
        #expect(next.status == 200)
        #expect(next.text == "2")
    }

    /// A watch whose change came during a delay longer than the rest of its
    /// wait: at the watch's deadline the connection took the deadline answer
    /// (304) and ran the cancel handlers, which dropped the held 200. The
    /// client was told "not modified" about a value that had changed.
    @Test func aDelayedWatchAnswerIsNotReplacedByTheWatchDeadline() throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        let client = server.client()
        let etag = try #require(try client.put("watched/k", "v1").header("ETag"))
        let rules = try client.send("PUT", "/faults",
                                    body: Array(#"[{"id":"late","prefix":"watched/","methods":["GET"],"delayMs":9000}]"#.utf8))
        #expect(rules.status == 200)
        let port = server.port
        let watcher = Background { () -> ClientResponse in
            let connection = try HTTPClientConnection(port: port, timeout: 30)
            return try connection.request("GET", "/store/watched/k?wait=8", headers: [("If-None-Match", etag)])
        }
        // The PUT must come before the watch's 8 s deadline: 3 s was not
        // slack enough for a loaded CI machine (it answered 304 there). The
        // 9 s delay then holds the answer past that deadline however early
        // the PUT came.
        #expect(WatchTests.waitForWatchers(server, 1))
        let registered = Date()
        #expect(try client.put("watched/k", "v2").status == 204)
        let putTook = Date().timeIntervalSince(registered)
        #expect(putTook < 8, "the PUT took \(putTook) s, past the watch's deadline: the test proves nothing")
        let woken = try watcher.wait()
        #expect(woken.status == 200, "the change was answered \(woken.status)")
        #expect(woken.text == "v2")
        #expect(woken.header("Larder-Fault") == "late")
    }

    /// Three hundred watches answered by a PUT, one after another, each on
    /// its own connection that the client closes: no watcher and no
    /// connection stays behind.
    @Test func answeredWatchesLeaveNoWatcherOrConnection() throws {
        let server = try TestServer()
        defer { server.stop() }
        let writer = try server.connection(timeout: 10)
        var etag = try #require(try writer.request("PUT", "/store/leak", body: Array("v0".utf8)).header("ETag"))
        for round in 1...300 {
            let watcher = try server.connection(timeout: 10)
            try watcher.send(WatchTests.watchRequest("/store/leak?wait=30", etag: etag))
            guard WatchTests.waitForWatchers(server, 1) else {
                Issue.record("round \(round): the watch never registered")
                return
            }
            let put = try writer.request("PUT", "/store/leak", body: Array("v\(round)".utf8))
            etag = try #require(put.header("ETag"))
            let answer = try watcher.readResponse()
            guard answer.status == 200, answer.text == "v\(round)" else {
                Issue.record("round \(round): the watch answered \(answer.status) \(answer.text)")
                return
            }
            watcher.close()
        }
        writer.close()
        // The last watch ends (`KeyWatch.end`) just after its answer went out.
        #expect(Poll.holds(within: Poll.patience) { server.server.watcherCount == 0 }, "\(server.server.watcherCount) watchers left")
        #expect(Poll.holds(within: Poll.patience) { server.server.http.connectionCount == 0 },
                "\(server.server.http.connectionCount) connections still open 2 s after every client closed")
    }

    /// Before: an answered watch's responder kept itself (through its
    /// deadline answer) and its connection alive after the connection closed,
    /// so every watch answered by a change leaked a connection's memory. In a
    /// child process, 2,000 of them must not grow its resident memory much.
    @Test func answeredWatchesDoNotGrowMemory() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        let writer = try HTTPClientConnection(port: child.port, timeout: 20)
        var etag = try #require(try writer.request("PUT", "/store/leak", body: Array("v0".utf8)).header("ETag"))
        /// `count` watches parked at once, answered by one PUT; the clients then close.
        func round(_ index: Int, count: Int) throws {
            var watchers: [HTTPClientConnection] = []
            for _ in 0..<count {
                let c = try HTTPClientConnection(port: child.port, timeout: 20)
                try c.send(WatchTests.watchRequest("/store/leak?wait=30", etag: etag))
                watchers.append(c)
            }
            usleep(150_000)   // all parked (no watcherCount across processes)
            let put = try writer.request("PUT", "/store/leak", body: Array("v\(index)".utf8))
            etag = try #require(put.header("ETag"))
            var statuses: [Int: Int] = [:]
            for c in watchers {
                let r = try c.readResponse()
                statuses[r.status, default: 0] += 1
                c.close()
            }
            #expect(statuses == [200: count], "round \(index): \(statuses)")
        }
        WatchTests.raiseDescriptorLimit(to: 4096)
        for i in 1...2 { try round(i, count: 200) }   // warm up the allocator
        usleep(200_000)
        let before = try #require(child.rssKiB())
        for i in 3...12 { try round(i, count: 200) }
        usleep(200_000)
        let after = try #require(child.rssKiB())
        print("WatchAnswerTests: RSS \(before) KiB -> \(after) KiB after 2000 answered watches")
        #expect(after - before < 8 * 1024, "RSS grew \(after - before) KiB over 2000 answered watches (\(before) -> \(after) KiB)")
    }
}
