import LarderModel
import Foundation
import LarderSupport
import LarderApp
import LarderRouting
import LarderServer
import LarderTestSupport
import LarderWire
import LarderHTTP
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// Counts the statuses of the answers a middleware saw.
final class StatusCounter: Sendable {
    private let counts = Locked<[Int: Int]>([:])
    func add(_ status: Int) { counts.withLock { $0[status, default: 0] += 1 } }
    var all: [Int: Int] { counts.withLock { $0 } }
}

/// Stamps every answer with a header and counts it, through
/// `request.responder.intercept`, so it sees the final response whichever
/// path produced it (an immediate answer, a PUT after its body, a watch later).
struct StampMiddleware: LarderMiddleware {
    static let header = "X-Larder-Seam"
    let counter: StatusCounter

    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
        var request = request
        let counter = counter
        let method = "\(request.method)"
        request.responder = request.responder.intercept { response, next in
            var response = response
            response.headers.append((Self.header, "seen \(method)"))
            counter.add(response.status.code)
            next.respond(response)
        }
        return next(request)
    }
}

/// Answers 401 to a PUT without the right token, early, without calling `next`.
struct GateMiddleware: LarderMiddleware {
    let passed: StatusCounter

    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
        if request.method == .put && request.head.headers["Authorization"] != "Bearer let-me-in" {
            request.responder.respond(.json(.unauthorized, ErrorBody(.unauthorized, "no token"),
                                            headers: [("WWW-Authenticate", "Bearer")]))
            return .ignore
        }
        passed.add(0)
        return next(request)
    }
}

@Suite(.blockingLane) struct MiddlewareTests {
    static func expectStamp(_ response: ClientResponse, _ method: String, _ what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        let values = response.headerValues(StampMiddleware.header)
        #expect(values == ["seen \(method)"], "\(what): \(StampMiddleware.header) is \(values)", sourceLocation: sourceLocation)
    }

    @Test func interceptSeesEveryAnswerIncludingBodyPathsAndLaterOnes() throws {
        let counter = StatusCounter()
        let server = try TestServer { $0.middleware = [StampMiddleware(counter: counter)] }
        let client = server.client()

        let created = try client.put("seam/a", "first")                                  // 201, after the body
        #expect(created.status == 201)
        #expect(created.header("ETag") != nil, "the route's own headers are kept")
        Self.expectStamp(created, "PUT", "PUT 201")
        let chunked = try client.send("PUT", "/store/seam/chunked", headers: [("Transfer-Encoding", "chunked")],
                                      body: Array("5\r\nhello\r\n0\r\n\r\n".utf8))     // 201, chunked body
        #expect(chunked.status == 201)
        Self.expectStamp(chunked, "PUT", "chunked PUT 201")
        let replaced = try client.put("seam/a", "second")                                // 204
        #expect(replaced.status == 204)
        Self.expectStamp(replaced, "PUT", "PUT 204")
        let etag = try #require(replaced.header("ETag"))

        let get = try client.get("seam/a")                                               // 200
        #expect(get.status == 200)
        #expect(get.text == "second")
        Self.expectStamp(get, "GET", "GET 200")
        let missing = try client.get("seam/missing")                                     // 404
        S.expectError(missing, status: 404, code: "not_found")
        Self.expectStamp(missing, "GET", "GET 404")
        let bad = try client.send("PUT", "/store/seam/a?ttl=0", body: Array("x".utf8))  // 400 thrown by the route
        #expect(bad.status == 400)
        Self.expectStamp(bad, "PUT", "PUT 400")
        let post = try client.send("POST", "/store/seam/gen/", body: Array("{}".utf8))  // 201, generated key
        #expect(post.status == 201)
        #expect(post.header("Location")?.hasPrefix("/store/seam/gen/") == true)
        Self.expectStamp(post, "POST", "POST create 201")
        let append = try client.send("POST", "/store/seam/list", body: Array("1".utf8)) // 200, JSON append
        #expect(append.status == 200)
        Self.expectStamp(append, "POST", "POST append 200")
        let health = try client.send("GET", "/healthz")                                  // 200, another route
        Self.expectStamp(health, "GET", "healthz")
        let notModified = try client.get("seam/a", headers: [("If-None-Match", etag)])  // 304
        #expect(notModified.status == 304)
        Self.expectStamp(notModified, "GET", "GET 304")

        // A watch answered later, from another thread, passes through the interceptor too.
        let port = server.port
        let watcher = Background { () -> ClientResponse in
            let connection = try HTTPClientConnection(port: port, timeout: 15)
            return try connection.request("GET", "/store/seam/a?wait=10", headers: [("If-None-Match", etag)])
        }
        #expect(WatchTests.waitForWatchers(server, 1))
        let before = counter.all
        #expect(try client.put("seam/a", "third").status == 204)                        // 204
        let woken = try watcher.wait()                                                 // 200, later
        #expect(woken.status == 200)
        #expect(woken.text == "third")
        Self.expectStamp(woken, "GET", "watch answered later")
        #expect(counter.all[200, default: 0] == before[200, default: 0] + 1, "the watch's 200 was not counted once")

        let counts = counter.all
        #expect(counts == [201: 3, 204: 2, 200: 4, 404: 1, 400: 1, 304: 1], "statuses counted: \(counts)")
    }

    /// The other way a watch ends later: its deadline. The 304 sent when the
    /// time is up is the final answer too and must pass through `intercept`.
    @Test func aWatchTimingOutPassesThroughTheInterceptor() throws {
        let counter = StatusCounter()
        let server = try TestServer { $0.middleware = [StampMiddleware(counter: counter)] }
        let client = server.client()
        let etag = try #require(try client.put("seam/idle", "unchanged").header("ETag"))
        let start = Date()
        let timedOut = try client.send("GET", "/store/seam/idle?wait=1", headers: [("If-None-Match", etag)])
        #expect(Date().timeIntervalSince(start) >= 0.9)
        #expect(timedOut.status == 304)
        #expect(timedOut.header("ETag") == etag)
        Self.expectStamp(timedOut, "GET", "watch answered at its deadline")
        // The same for a watch on an absent key that ends with 404 at its deadline.
        // (On a new connection: see WatchTests.aConnectionGoesOnAfterAWatchTimesOut.)
        let absent = try server.client().send("GET", "/store/seam/never?wait=1")
        #expect(absent.status == 404)
        Self.expectStamp(absent, "GET", "absent-key watch answered at its deadline")
        #expect(counter.all == [201: 1, 304: 1, 404: 1], "statuses counted: \(counter.all)")
    }

    @Test func earlyAnswerSkipsTheBodyAndContinue() throws {
        let stamps = StatusCounter()
        let passed = StatusCounter()
        let server = try TestServer { $0.middleware = [StampMiddleware(counter: stamps), GateMiddleware(passed: passed)] }
        let client = server.client()
        let original = try client.send("PUT", "/store/gate/k", headers: [("Authorization", "Bearer let-me-in")],
                                       body: Array("original".utf8))
        #expect(original.status == 201)
        let etag = original.header("ETag")

        // Expect: 100-continue with a body announced: 401 at once, no 100 first.
        let connection = try server.connection(timeout: 5)
        let body = Array("overwritten!".utf8)
        try connection.send("PUT /store/gate/k HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n"
                            + "Content-Length: \(body.count)\r\nExpect: 100-continue\r\n\r\n")
        // Answered without the body: waiting for it would meet the 5 s socket timeout.
        let answer = try connection.readResponse(skipInterim: false)
        #expect(answer.status == 401, "the first answer to an unauthorized PUT with Expect: 100-continue is \(answer.status)")
        #expect(answer.status != 100, "100 Continue sent though the middleware answered early")
        #expect(answer.header("WWW-Authenticate") == "Bearer")
        #expect(answer.json?["error"] as? String == "unauthorized")
        Self.expectStamp(answer, "PUT", "early 401 seen by the outer middleware")
        // A client that sends the body anyway must not get it stored.
        try? connection.send(body)
        var pfd = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
        if poll(&pfd, 1, 500) == 1 {
            var byte: UInt8 = 0
            let n = recv(connection.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            #expect(n <= 0, "the server answered again after the early 401 (the body was taken as a request?)")
        }

        // A plain unauthorized PUT with its body: 401 as well.
        let plain = try client.send("PUT", "/store/gate/k", body: Array("also overwritten".utf8))
        #expect(plain.status == 401)
        let fresh = try client.send("PUT", "/store/gate/new", body: Array("never".utf8))
        #expect(fresh.status == 401)

        // The store is unchanged.
        let get = try client.get("gate/k")
        #expect(get.status == 200)
        #expect(get.text == "original")
        #expect(get.header("ETag") == etag)
        #expect(try client.get("gate/new").status == 404)
        #expect(try S.listAll(client).keys == ["gate/k"])
        // The inner middleware never passed the rejected PUTs on: only the
        // authorized PUT, and the GETs and listing after it.
        #expect(passed.all[0] == 4, "requests passed to the routes: \(passed.all[0] ?? 0)")
        #expect(stamps.all[401] == 3, "401s seen: \(stamps.all)")
    }

    /// An error found while the body was read (a snapshot line that is not
    /// valid, a chunked body over the limit) was sent by the connection
    /// directly, past the middleware: an answer a fault rule had touched
    /// came without `Larder-Fault` (and no middleware saw it at all).
    @Test func anErrorFoundInTheBodyPassesThroughTheMiddleware() throws {
        let server = try TestServer {
            $0.allowFaults = true
            $0.http.maxBodyBytes = 1000
        }
        defer { server.stop() }
        let client = server.client()
        let rules = try client.send("PUT", "/faults",
                                    body: Array(#"[{"id":"mark-store","prefix":"big/"},{"id":"mark-snapshot","prefix":"/snapshot"}]"#.utf8))
        #expect(rules.status == 200)

        let snapshot = try server.connection(timeout: 10)
        let document = #"{"key":"a","json":1}"# + "\nnot a line\n" + #"{"key":"b","json":2}"# + "\n"
        let restored = try snapshot.request("POST", "/snapshot", body: Array(document.utf8))
        ProtocolWire.expectError(restored, 400, "invalid_snapshot")
        #expect(restored.header("Larder-Fault") == "mark-snapshot")

        let upload = try server.connection(timeout: 10)
        try upload.send("PUT /store/big/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + String(2000, radix: 16) + "\r\n" + String(repeating: "x", count: 2000) + "\r\n0\r\n\r\n")
        let tooLarge = try upload.readResponse()
        ProtocolWire.expectError(tooLarge, 413, "payload_too_large")
        #expect(tooLarge.header("Larder-Fault") == "mark-store")
        ProtocolWire.expectCloses(tooLarge, upload)

        // Held back by a delay like any answer, then the connection closes.
        #expect(try client.send("POST", "/faults", body: Array(#"{"id":"slow","prefix":"slow/","delayMs":300}"#.utf8)).status == 200)
        let slow = try server.connection(timeout: 10)
        let start = Date()
        try slow.send("PUT /store/slow/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      + String(2000, radix: 16) + "\r\n" + String(repeating: "x", count: 2000) + "\r\n0\r\n\r\n")
        let late = try slow.readResponse()
        ProtocolWire.expectError(late, 413, "payload_too_large")
        #expect(late.header("Larder-Fault") == "slow")
        #expect(Date().timeIntervalSince(start) >= 0.3)
        ProtocolWire.expectCloses(late, slow)

        // A body that stalls: its 408 too.
        let quick = try TestServer {
            $0.allowFaults = true
            $0.http.idleTimeout = 0.5
        }
        defer { quick.stop() }
        #expect(try quick.client().send("PUT", "/faults", body: Array(#"[{"id":"mark","prefix":"stall/"}]"#.utf8)).status == 200)
        let stalled = try quick.connection(timeout: 10)
        try stalled.send("PUT /store/stall/k HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        let timedOut = try stalled.readResponse()
        ProtocolWire.expectError(timedOut, 408, "request_timeout")
        #expect(timedOut.header("Larder-Fault") == "mark")
    }
}
