import Foundation
import LarderModel
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// The request journal (`/journal`): every answered request of a
/// namespace, bounded, no bodies, secrets redacted; filters, `since` and
/// the `wait` long poll; emptied by `DELETE /journal` and by a reset.
@Suite(.blockingLane) struct JournalTests {
    /// `GET <base>/journal<query>` decoded; fails the test unless it is a 200.
    static func journal(_ client: WireClient, _ query: String = "", base: String = "",
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> JournalPage {
        let response = try client.send("GET", base + "/journal" + query)
        #expect(response.status == 200, "\(response.status) \(response.text)", sourceLocation: sourceLocation)
        return try JSONDecoder().decode(JournalPage.self, from: Data(response.body))
    }

    static func paths(_ page: JournalPage) -> [String] { page.requests.map { "\($0.method) \($0.path)" } }

    // MARK: - What an entry holds

    @Test func everyAnsweredRequestIsRecordedWithWhatItAskedAndGot() throws {
        let server = try TestServer()
        let client = server.client()
        let before = Date()
        let put = try client.put("users/7", Array(#"{"name":"Ada"}"#.utf8), contentType: "application/json")
        #expect(put.status == 201)
        let etag = try #require(put.header("ETag"))
        let get = try client.send("GET", "/store/users/7?x=1&access_token=s3cret")
        #expect(get.status == 200)
        #expect(try client.send("HEAD", "/store/users/7").status == 200)
        #expect(try client.get("missing").status == 404)
        let page = try Self.journal(client)
        #expect(Self.paths(page) == ["PUT /store/users/7", "GET /store/users/7", "HEAD /store/users/7", "GET /store/missing"])
        let (p, g, h, m) = (page.requests[0], page.requests[1], page.requests[2], page.requests[3])
        #expect(p.status == 201 && p.bytesIn == 14 && p.bytesOut == 0 && p.etag == etag && p.query == nil && p.fault == nil)
        #expect(g.status == 200 && g.bytesIn == 0 && g.bytesOut == 14 && g.etag == etag)
        // The token a browser's EventSource has to put in the URL is never kept.
        #expect(g.query == "x=1&access_token=REDACTED")
        #expect(h.status == 200 && h.bytesOut == 0, "a HEAD sends no body")
        let notFoundBody = try client.get("missing").body.count
        #expect(m.status == 404 && m.etag == nil && m.bytesOut == Int64(notFoundBody))
        // Sequence numbers rise by one; times are the requests' own.
        #expect(page.requests.map(\.seq) == [1, 2, 3, 4])
        #expect(page.next == 4 && page.dropped == 0)
        for entry in page.requests {
            let time = try #require(ISO8601.parse(entry.time), "\(entry.time)")
            #expect(entry.time.hasSuffix("Z") && entry.time.count == "2026-01-02T03:04:05.678Z".count)
            #expect(Double(time) / 1e9 >= before.timeIntervalSince1970 - 1 && Double(time) / 1e9 <= Date().timeIntervalSince1970 + 1)
            #expect(entry.ms >= 0)
        }
        // The same page as raw JSON has every field, null where absent, and no `op`.
        let raw = try #require(try client.send("GET", "/journal?limit=1").json)
        let first = try #require((raw["requests"] as? [[String: Any]])?.first)
        #expect(Set(first.keys) == ["seq", "time", "method", "path", "query", "status", "ms", "bytesIn", "bytesOut", "etag", "fault"])
        #expect(first["query"] is NSNull)
    }

    @Test func aChunkedBodyIsCountedAsItArrives() throws {
        let server = try TestServer()
        let connection = try HTTPClientConnection(port: server.port)
        try connection.send("PUT /store/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        #expect(try connection.readResponse().status == 201)
        let entry = try #require(try Self.journal(server.client()).requests.first)
        #expect(entry.path == "/store/chunked" && entry.bytesIn == 11)
    }

    @Test func theJournalHealthMetricsAndViewerAreNotRecorded() throws {
        let server = try TestServer()
        let client = server.client()
        for path in ["/journal", "/healthz", "/metrics", "/", "/viewer/app.js", "/journal?since=0"] {
            _ = try client.send("GET", path)
        }
        #expect(try Self.journal(client).requests.isEmpty)
        // Everything else is, unknown paths and the fault and snapshot endpoints included.
        _ = try client.send("GET", "/nowhere")
        _ = try client.send("GET", "/snapshot")
        #expect(Self.paths(try Self.journal(client)) == ["GET /nowhere", "GET /snapshot"])
    }

    // MARK: - Filters and paging

    @Test func filtersNarrowByMethodStatusAndKeyPrefix() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.put("users/1", "a").status == 201)
        #expect(try client.put("users2", "b").status == 201)
        #expect(try client.put("orders/1", "c").status == 201)
        #expect(try client.get("users/1").status == 200)
        #expect(try client.get("users/9").status == 404)
        #expect(try client.send("GET", "/store/caf%C3%A9/1").status == 404)
        #expect(Self.paths(try Self.journal(client, "?method=get")) == ["GET /store/users/1", "GET /store/users/9", "GET /store/caf%C3%A9/1"])
        #expect(Self.paths(try Self.journal(client, "?status=404")) == ["GET /store/users/9", "GET /store/caf%C3%A9/1"])
        #expect(Self.paths(try Self.journal(client, "?status=2xx&method=PUT")).count == 3)
        // A key prefix, byte for byte as S3's (`users` takes `users2` too), decoded.
        #expect(Self.paths(try Self.journal(client, "?prefix=users/")) == ["PUT /store/users/1", "GET /store/users/1", "GET /store/users/9"])
        #expect(try Self.journal(client, "?prefix=users").requests.count == 4)
        #expect(Self.paths(try Self.journal(client, "?prefix=caf%C3%A9")) == ["GET /store/caf%C3%A9/1"])
        // Bad filters say what is wrong.
        S.expectError(try client.send("GET", "/journal?since=abc"), status: 400, code: "invalid_argument")
        S.expectError(try client.send("GET", "/journal?status=99"), status: 400, code: "invalid_argument")
        S.expectError(try client.send("GET", "/journal?limit=0"), status: 400, code: "invalid_argument")
        S.expectError(try client.send("PUT", "/journal", body: [1]), status: 405, code: "method_not_allowed")
    }

    @Test func sinceAndLimitPageThroughInOrder() throws {
        let server = try TestServer()
        let client = server.client()
        for i in 1...7 { #expect(try client.get("k\(i)").status == 404) }
        var seen: [String] = []
        var since: UInt64 = 0
        for _ in 0..<10 {
            let page = try Self.journal(client, "?since=\(since)&limit=3")
            if page.requests.isEmpty { break }
            seen += Self.paths(page)
            #expect(page.requests.allSatisfy { $0.seq > since })
            since = page.next
        }
        #expect(seen == (1...7).map { "GET /store/k\($0)" })
        // After the end, `next` stays at the newest: the next call waits or comes back empty.
        #expect(try Self.journal(client, "?since=\(since)").requests.isEmpty)
        #expect(try Self.journal(client, "?since=\(since)").next == 7)
    }

    @Test func theRingKeepsTheLastNAndCountsTheRest() throws {
        let server = try TestServer { $0.journal = 5 }
        let client = server.client()
        for i in 1...8 { #expect(try client.get("k\(i)").status == 404) }
        let page = try Self.journal(client)
        #expect(Self.paths(page) == (4...8).map { "GET /store/k\($0)" })
        #expect(page.requests.map(\.seq) == [4, 5, 6, 7, 8])
        #expect(page.dropped == 3)
        // A limit above the ring's size is the ring's size.
        #expect(try Self.journal(client, "?limit=100000").requests.count == 5)
    }

    @Test func withJournalZeroThereIsNone() throws {
        let server = try TestServer { $0.journal = 0 }
        let client = server.client()
        #expect(try client.put("k", "v").status == 201)
        let response = try client.send("GET", "/journal")
        S.expectError(response, status: 404, code: "not_found")
        #expect(response.text.contains("--journal 0"))
        S.expectError(try client.send("GET", "/ns/w1/journal"), status: 404, code: "not_found")
    }

    // MARK: - Emptying

    @Test func deleteAndAResetEmptyItWhileSequenceNumbersGoOn() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.put("a/1", "x").status == 201)
        #expect(try client.send("DELETE", "/journal").status == 204)
        #expect(try Self.journal(client).requests.isEmpty)
        #expect(try client.put("a/2", "y").status == 201)
        // Deleting a prefix is a request like any other ...
        #expect(try client.deletePrefix("a/").status == 200)
        let page = try Self.journal(client)
        #expect(Self.paths(page) == ["PUT /store/a/2", "DELETE /store/a/"])
        #expect(page.requests.map(\.seq) == [2, 3])
        // ... the reset of the whole namespace empties the journal instead,
        // so a test that resets first sees only its own requests.
        #expect(try client.deletePrefix("").status == 200)
        #expect(try Self.journal(client).requests.isEmpty)
        #expect(try client.get("a/2").status == 404)
        let after = try Self.journal(client)
        #expect(Self.paths(after) == ["GET /store/a/2"] && after.requests.first?.seq == 4)
    }

    // MARK: - The long poll

    @Test func aWaitingReadIsAnsweredByTheNextMatchingRequestWithoutAThread() throws {
        let server = try TestServer()
        let client = server.client()
        let port = server.port
        let waiter = Background { () -> ClientResponse in
            let connection = try HTTPClientConnection(port: port)
            return try connection.request("GET", "/journal?since=0&wait=20&method=PUT")
        }
        try Poll.until(10, "the waiter to park") { server.server.journalWaiterCount == 1 }
        // A request the filter does not take leaves it waiting.
        #expect(try client.get("other").status == 404)
        usleep(100_000)
        #expect(server.server.journalWaiterCount == 1)
        #expect(try client.put("woken", "v").status == 201)
        let response = try waiter.wait()
        let page = try JSONDecoder().decode(JournalPage.self, from: Data(response.body))
        #expect(Self.paths(page) == ["PUT /store/woken"])
        #expect(server.server.journalWaiterCount == 0)
    }

    @Test func aWaitThatRunsOutAnswersAnEmptyPageAndAClientThatLeavesIsForgotten() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.get("k").status == 404)
        let page = try Self.journal(client, "?since=1&wait=1")
        #expect(page.requests.isEmpty && page.next == 1)
        // A `since` beyond every number given is from an earlier run of the
        // server: the answer starts from the oldest entry, at once.
        let stale = try Self.journal(client, "?since=500&wait=30")
        #expect(Self.paths(stale) == ["GET /store/k"])
        // Many waiters cost no thread each: 200 park, the server still answers.
        var connections: [HTTPClientConnection] = []
        for _ in 0..<200 {
            let c = try HTTPClientConnection(port: server.port)
            try c.send("GET /journal?since=1&wait=60 HTTP/1.1\r\nHost: x\r\n\r\n")
            connections.append(c)
        }
        try Poll.until(10, "200 waiters") { server.server.journalWaiterCount == 200 }
        #expect(try client.put("x", "1").status == 201)
        for c in connections { #expect(try c.readResponse().status == 200) }
        // One that hangs up is taken off the list.
        let leaving = try HTTPClientConnection(port: server.port)
        try leaving.send("GET /journal?since=2&wait=60 HTTP/1.1\r\nHost: x\r\n\r\n")
        try Poll.until(10, "the waiter to park") { server.server.journalWaiterCount == 1 }
        leaving.close()
        try Poll.until(10, "the waiter to be forgotten") { server.server.journalWaiterCount == 0 }
    }

    // MARK: - Namespaces, auth and faults

    @Test func eachNamespaceHasItsOwnJournalWithItsOwnPaths() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.send("PUT", "/ns/w1/store/a", body: Array("1".utf8)).status == 201)
        #expect(try client.send("GET", "/ns/w1/store/a").status == 200)
        #expect(try client.send("GET", "/ns/w2/store/a").status == 404)
        #expect(try client.get("a").status == 404)
        #expect(Self.paths(try Self.journal(client, base: "/ns/w1")) == ["PUT /store/a", "GET /store/a"])
        #expect(Self.paths(try Self.journal(client, base: "/ns/w2")) == ["GET /store/a"])
        #expect(Self.paths(try Self.journal(client)) == ["GET /store/a"])
        // A reset of one namespace empties its journal alone.
        #expect(try client.send("DELETE", "/ns/w1/store/").status == 200)
        #expect(try Self.journal(client, base: "/ns/w1").requests.isEmpty)
        #expect(try Self.journal(client, base: "/ns/w2").requests.count == 1)
        // The registry's own requests are the server's: the default journal's.
        #expect(try client.send("GET", "/ns/").status == 200)
        #expect(Self.paths(try Self.journal(client)).last == "GET /ns/")
    }

    @Test func droppingANamespaceAnswersItsWaiters() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.send("PUT", "/ns/w1/store/a", body: [1]).status == 201)
        let port = server.port
        let waiter = Background { () -> ClientResponse in
            try HTTPClientConnection(port: port).request("GET", "/ns/w1/journal?since=1&wait=30")
        }
        try Poll.until(10, "the waiter to park") { server.server.journalWaiterCount == 1 }
        #expect(try client.send("DELETE", "/ns/w1").status == 204)
        let response = try waiter.wait()
        #expect(response.status == 200)
        #expect(server.server.journalWaiterCount == 0)
    }

    @Test func withATokenTheJournalNeedsItAndRefusalsAreRecorded() throws {
        let server = try TestServer { $0.token = "t0ken" }
        let client = server.client()
        S.expectError(try client.send("GET", "/journal"), status: 401, code: "unauthorized")
        S.expectError(try client.send("GET", "/store/k"), status: 401, code: "unauthorized")
        let authorized = server.client()
        authorized.token = "t0ken"
        let page = try Self.journal(authorized)
        // The refused store request is there (what a client without the token tried); the
        // refused read of the journal is not (the journal's own requests never are).
        #expect(page.requests.map { "\($0.method) \($0.path) \($0.status ?? 0)" } == ["GET /store/k 401"])
    }

    @Test func faultedRequestsNameTheirRule() throws {
        let server = try TestServer { $0.allowFaults = true }
        let client = server.client()
        let rules = #"[{"id":"slow","prefix":"slow/","delayMs":150},{"id":"down","prefix":"down/","status":503}]"#
        #expect(try client.send("PUT", "/faults", body: Array(rules.utf8)).status == 200)
        #expect(try client.get("down/1").status == 503)
        #expect(try client.get("slow/1").status == 404)
        #expect(try client.get("fine").status == 404)
        let page = try Self.journal(client, "?prefix=")
        #expect(page.requests.map { "\($0.path) \($0.status ?? 0) \($0.fault ?? "-")" }
                == ["/store/down/1 503 down", "/store/slow/1 404 slow", "/store/fine 404 -"])
        // The delay is part of the time the client waited.
        #expect(page.requests[1].ms >= 150)
    }
    // MARK: - Found in review

    @Test func numbersAreNeverGivenTwiceNotEvenToANamespaceMadeAgain() throws {
        let server = try TestServer()
        let client = server.client()
        for i in 1...3 { #expect(try client.send("PUT", "/ns/w1/store/k\(i)", body: [1]).status == 201) }
        let before = try Self.journal(client, base: "/ns/w1")
        #expect(try client.send("DELETE", "/ns/w1").status == 204)
        #expect(try client.send("PUT", "/ns/w1/store/new", body: [1]).status == 201)
        // A follower of the old w1 sees the new w1's first request.
        let after = try Self.journal(client, "?since=\(before.next)", base: "/ns/w1")
        #expect(Self.paths(after) == ["PUT /store/new"])
        // Numbers rise within a namespace, with gaps where others' requests came.
        #expect(try client.get("x").status == 404)
        #expect(try client.send("GET", "/ns/w1/store/new").status == 200)
        let seqs = try Self.journal(client, base: "/ns/w1").requests.map(\.seq)
        #expect(seqs.count == 2 && seqs[1] >= seqs[0] + 2)
    }

    @Test func aResetWithoutTheSlashEmptiesItToo() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.put("a", "1").status == 201)
        #expect(try client.send("DELETE", "/store").status == 200)
        #expect(try Self.journal(client).requests.isEmpty)
    }

    @Test func refusedRequestsAndBadNamespaceNamesAreRecorded() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1024 }
        let client = server.client()
        let big = [UInt8](repeating: 7, count: 5000)
        #expect(try client.send("PUT", "/store/big", body: big).status == 413)
        #expect(try client.send("PUT", "/ns/w1/store/ok", body: [1]).status == 201)
        #expect(try client.send("PUT", "/ns/w1/store/big", body: big).status == 413)
        #expect(try client.send("GET", "/ns/a%20b/store/x").status == 400)
        // The first request of a namespace that reads its journal is recorded nowhere.
        #expect(try client.send("GET", "/ns/w3/journal").status == 200)
        #expect(Self.paths(try Self.journal(client)) == ["PUT /store/big", "GET /ns/a%20b/store/x"])
        #expect(Self.paths(try Self.journal(client, base: "/ns/w1")) == ["PUT /store/ok", "PUT /store/big"])
        #expect(try Self.journal(client, base: "/ns/w3").requests.isEmpty)
    }
}
