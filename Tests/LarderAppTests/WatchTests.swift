import Dispatch
import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// `GET /store/<key>?wait=S`: a request held open until the value changes,
/// woken by another client's write, parked without a thread.
@Suite(.blockingLane) struct WatchTests {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Polls until `server.watcherCount == count`; false after `seconds`.
    static func waitForWatchers(_ server: TestServer, _ count: Int, within seconds: Double = Poll.patience) -> Bool {
        Poll.holds(within: seconds, every: 0.001) { server.server.watcherCount == count }
    }

    /// A watch request on its own connection on another thread: the response and when it was read.
    static func watch(_ port: Int, _ target: String, etag: String?, timeout: Double = 20) -> Background<(ClientResponse, UInt64)> {
        Background {
            let connection = try HTTPClientConnection(port: port, timeout: timeout)
            let response = try connection.request("GET", target, headers: etag.map { [("If-None-Match", $0)] } ?? [])
            return (response, Self.now())
        }
    }

    static func raiseDescriptorLimit(to wanted: rlim_t) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < wanted {
            limit.rlim_cur = min(wanted, limit.rlim_max)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
    }

    static func watchRequest(_ target: String, etag: String) -> String {
        "GET \(target) HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: \(etag)\r\n\r\n"
    }

    // MARK: - Tests

    @Test func aPutWakesTheWatcherQuickly() throws {
        let server = try TestServer()
        let client = server.client()
        var etag = try #require(try client.put("w/key", "v0").header("ETag"))
        var latencies: [Double] = []
        for round in 1...5 {
            let watcher = Self.watch(server.port, "/store/w/key?wait=300", etag: etag)
            #expect(Self.waitForWatchers(server, 1), "round \(round): the watch never registered")
            // The watcher is parked: nothing answered yet.
            usleep(20_000)
            let put = try client.put("w/key", "v\(round)")
            let putAnswered = Self.now()
            #expect(put.status == 204)
            let newTag = try #require(put.header("ETag"))
            #expect(newTag != etag)
            let (response, watchAnswered) = try watcher.wait()
            #expect(response.status == 200, "round \(round): \(response.status) \(response.text)")
            #expect(response.text == "v\(round)")
            #expect(response.header("ETag") == newTag)
            latencies.append(Double(Int64(bitPattern: watchAnswered &- putAnswered)) / 1e6)
            etag = newTag
            #expect(Self.waitForWatchers(server, 0))
        }
        let median = latencies.sorted()[2]
        print("WatchTests: wake-up latency (watcher answer minus PUT answer), ms: \(latencies.map { String(format: "%.2f", $0) }) median \(String(format: "%.2f", median))")
        // What is checked is that the PUT wakes the watch, with the new
        // value: nothing else would answer a wait=300 before the watcher's
        // 20 s socket timeout. The latency is a printed figure, not a bound.
    }

    @Test func timesOutWith304AndTheETag() throws {
        let server = try TestServer()
        let client = server.client()
        let etag = try #require(try client.put("w/idle", "same").header("ETag"))
        let response = try client.get("w/idle", headers: [("If-None-Match", etag)]) // no wait: a plain 304
        #expect(response.status == 304)
        let connection = try server.connection()
        let waitStart = Date()
        let timedOut = try connection.request("GET", "/store/w/idle?wait=1", headers: [("If-None-Match", etag)])
        let elapsed = Date().timeIntervalSince(waitStart)
        #expect(timedOut.status == 304, "\(timedOut.status) \(timedOut.text)")
        #expect(timedOut.header("ETag") == etag)
        #expect(timedOut.body.isEmpty)
        #expect(elapsed >= 0.9, "wait=1 answered after \(elapsed) s, before its deadline")
        #expect(server.server.watcherCount == 0, "the timed-out watcher is still registered")
        // The connection is still good for the next request.
        #expect(try connection.request("GET", "/store/w/idle").text == "same")
    }

    /// A watch answered at its deadline leaves the connection as it was: the
    /// next watch on it times out too, and the idle timeout still closes it.
    @Test func aConnectionGoesOnAfterAWatchTimesOut() throws {
        let server = try TestServer { $0.http.idleTimeout = 2 }
        let client = server.client()
        let etag = try #require(try client.put("w/again", "same").header("ETag"))
        let connection = try server.connection(timeout: 3.5)
        let first = try connection.request("GET", "/store/w/again?wait=1", headers: [("If-None-Match", etag)])
        #expect(first.status == 304)
        let start = Date()
        let second = Result { try connection.request("GET", "/store/w/again?wait=1", headers: [("If-None-Match", etag)]) }
        let elapsed = Date().timeIntervalSince(start)
        // (Had the server not answered it, the 3.5 s socket timeout would have ended it.)
        #expect((try? second.get())?.status == 304,
                "a second wait=1 on the connection after a timed-out watch: \(second) after \(elapsed) s")

        // The idle timeout (2 s) still applies after a timed-out watch.
        let idle = try server.connection(timeout: 5)
        #expect(try idle.request("GET", "/store/w/again?wait=1", headers: [("If-None-Match", etag)]).status == 304)
        #expect(ProtocolWire.closedByServer(idle), "an idle connection was not closed after its watch timed out (idle timeout 2 s)")
        // Control: the idle timeout closes a connection whose last request was a plain GET.
        let control = try server.connection(timeout: 5)
        #expect(try control.request("GET", "/store/w/again").status == 200)
        #expect(ProtocolWire.closedByServer(control), "the idle timeout does not work at all")
    }

    @Test func aDeleteWakesTheWatcherWith404() throws {
        let server = try TestServer()
        let client = server.client()
        let etag = try #require(try client.put("w/doomed", "here").header("ETag"))
        // wait=300: only the DELETE can answer it before the watcher's 20 s socket timeout.
        let watcher = Self.watch(server.port, "/store/w/doomed?wait=300", etag: etag)
        #expect(Self.waitForWatchers(server, 1))
        #expect(try client.delete("w/doomed").status == 204)
        let (response, _) = try watcher.wait(Poll.patience)
        S.expectError(response, status: 404, code: "not_found")
    }

    @Test func aNonMatchingETagAnswersAtOnce() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.put("w/k", "current").status == 201)
        // wait=300: a watch that waited would meet the client's 30 s socket timeout instead.
        let response = try client.send("GET", "/store/w/k?wait=300", headers: [("If-None-Match", "\"not-the-tag\"")])
        #expect(response.status == 200)
        #expect(response.text == "current")
        // A store whose reads are round trips (PostgreSQL) answers from its
        // executor, and the watch is ended there just after: soon, not
        // necessarily before the answer reaches the client.
        #expect(Self.waitForWatchers(server, 0), "a watch that answered is still registered")
        // wait=0 with a matching tag: the plain conditional answer, at once.
        let tag = try #require(response.header("ETag"))
        let zero = try client.send("GET", "/store/w/k?wait=0", headers: [("If-None-Match", tag)])
        #expect(zero.status == 304)
    }

    @Test func anAbsentKeyIsAwaitedUntilCreatedOr404AtTheDeadline() throws {
        let server = try TestServer()
        let client = server.client()
        // Created while waited for: 200 with the new value.
        let watcher = Self.watch(server.port, "/store/w/later?wait=10", etag: nil)
        #expect(Self.waitForWatchers(server, 1), "a watch on an absent key did not wait")
        let put = try client.put("w/later", "born")
        #expect(put.status == 201)
        let (response, _) = try watcher.wait()
        #expect(response.status == 200)
        #expect(response.text == "born")
        #expect(response.header("ETag") == put.header("ETag"))

        // Never created: 404 at the deadline.
        let start = Date()
        let never = try client.send("GET", "/store/w/never?wait=1")
        let elapsed = Date().timeIntervalSince(start)
        S.expectError(never, status: 404, code: "not_found")
        #expect(elapsed >= 0.9, "404 after \(elapsed) s, before the deadline")
        // An existing key without If-None-Match answers at once: were it
        // held for its wait=300, the client's socket timeout would end the read.
        #expect(try client.send("GET", "/store/w/later?wait=300").text == "born")
    }

    @Test func waitIsCappedNotRejected() throws {
        let server = try TestServer()
        let client = server.client()
        let etag = try #require(try client.put("w/cap", "a").header("ETag"))
        let watcher = Self.watch(server.port, "/store/w/cap?wait=100000", etag: etag)
        #expect(Self.waitForWatchers(server, 1), "wait=100000 did not park a watcher")
        let put = try client.put("w/cap", "b")
        let (response, _) = try watcher.wait()
        #expect(response.status == 200, "wait=100000: \(response.status) \(response.text)")
        #expect(response.text == "b")
        #expect(response.header("ETag") == put.header("ETag"))
        // Not a number: 400.
        S.expectError(try client.send("GET", "/store/w/cap?wait=abc", headers: [("If-None-Match", etag)]),
                      status: 400, code: "invalid_argument")
    }

    @Test func aThousandWatchersAreAllWokenByOnePut() throws {
        Self.raiseDescriptorLimit(to: 8192)
        let server = try TestServer()
        let client = server.client()
        let etag = try #require(try client.put("w/many", "before").header("ETag"))
        var connections: [HTTPClientConnection] = []
        // wait=60 is the bound: a watcher the PUT failed to wake would answer 304 at
        // its timeout and land in `wrong`. No wall-clock bound beyond that (the time
        // is printed); TSan and a loaded CI machine make any tighter one a flake.
        let request = Self.watchRequest("/store/w/many?wait=60", etag: etag)
        for _ in 0..<1000 {
            let connection = try HTTPClientConnection(port: server.port, timeout: 15)
            try connection.send(request)
            connections.append(connection)
        }
        #expect(Self.waitForWatchers(server, 1000, within: 15), "only \(server.server.watcherCount) of 1000 watchers registered")
        // Parked, not answered.
        #expect(ProtocolWire.staysOpen(connections[0], for: 0.1))
        #expect(ProtocolWire.staysOpen(connections[999], for: 0.05))

        let start = Date()
        let put = try client.put("w/many", "after")
        let newTag = try #require(put.header("ETag"))
        var wrong: [String] = []
        for (i, connection) in connections.enumerated() {
            do {
                let response = try connection.readResponse()
                if response.status != 200 || response.header("ETag") != newTag || response.text != "after" {
                    wrong.append("#\(i): \(response.status) \(response.header("ETag") ?? "-") \(response.text.prefix(40))")
                }
            } catch {
                wrong.append("#\(i): \(error)")
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        print("WatchTests: 1000 watchers woken and read in \(String(format: "%.3f", elapsed)) s")
        #expect(wrong.isEmpty, "\(wrong.count) watchers: \(wrong.prefix(5))")
        // (Each watch ends just after its answer: see aNonMatchingETagAnswersAtOnce.)
        #expect(Self.waitForWatchers(server, 0), "watchers left after answering: \(server.server.watcherCount)")
        // Every connection is still usable afterwards.
        #expect(try connections[500].request("GET", "/store/w/many").text == "after")
    }

    @Test func aWatcherWhoseClientHangsUpIsDropped() throws {
        let server = try TestServer()
        let client = server.client()
        let etag = try #require(try client.put("w/hangup", "x").header("ETag"))
        var connections: [HTTPClientConnection]? = []
        for _ in 0..<3 {
            let connection = try server.connection()
            try connection.send(Self.watchRequest("/store/w/hangup?wait=60", etag: etag))
            connections!.append(connection)
        }
        #expect(Self.waitForWatchers(server, 3))
        connections = nil  // closes all three sockets
        #expect(Self.waitForWatchers(server, 0), "watchers left after their clients hung up: \(server.server.watcherCount)")

        // The server keeps serving, writes to the key work, and a new watch works.
        #expect(try client.get("w/hangup").text == "x")
        let put = try client.put("w/hangup", "y")
        #expect(put.status == 204)
        let tag = try #require(put.header("ETag"))
        let watcher = Self.watch(server.port, "/store/w/hangup?wait=10", etag: tag)
        #expect(Self.waitForWatchers(server, 1))
        #expect(try client.put("w/hangup", "z").status == 204)
        let (response, _) = try watcher.wait()
        #expect(response.text == "z")
        #expect(try server.client().send("GET", "/healthz").status == 200)
    }

    @Test func aPipelinedRequestBehindAWatchIsAnsweredAfterIt() throws {
        let server = try TestServer()
        let client = server.client()
        let etag = try #require(try client.put("w/pipe", "old").header("ETag"))
        #expect(try client.put("w/other", "other value").status == 201)
        let connection = try server.connection(timeout: 10)
        try connection.send(Self.watchRequest("/store/w/pipe?wait=10", etag: etag)
                            + "GET /store/w/other HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(Self.waitForWatchers(server, 1))
        // The second request must not overtake the parked watch.
        #expect(ProtocolWire.staysOpen(connection, for: 0.3), "something was answered while the watch was parked")
        let put = try client.put("w/pipe", "new")
        let first = try connection.readResponse()
        let second = try connection.readResponse()
        #expect(first.status == 200)
        #expect(first.text == "new", "the first answer is not the watch's: \(first.text)")
        #expect(first.header("ETag") == put.header("ETag"))
        #expect(second.status == 200)
        #expect(second.text == "other value", "the second answer: \(second.text)")
        // And the connection goes on.
        #expect(try connection.request("GET", "/store/w/pipe").text == "new")
    }
}
