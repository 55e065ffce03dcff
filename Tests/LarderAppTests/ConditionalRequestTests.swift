import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Conditional requests" (RFC 9110 section 13): If-Match,
/// If-None-Match, If-Modified-Since, If-Unmodified-Since on every method
/// that takes them, their evaluation order, and compare-and-swap between
/// real processes.
@Suite(.blockingLane) struct ConditionalRequestTests {
    static let longAgo = "Sat, 01 Jan 2000 00:00:00 GMT"
    static let farFuture = "Fri, 01 Jan 2100 00:00:00 GMT"

    /// PUTs `value` at `key` and returns its ETag.
    static func store(_ client: WireClient, _ key: String, _ value: String,
                      contentType: String = "application/json") throws -> String {
        let put = try client.put(key, value, contentType: contentType)
        guard put.status == 201 || put.status == 204, let tag = put.header("ETag") else {
            throw StoreTestFailure("PUT \(key): \(put.status) \(put.text)")
        }
        return tag
    }

    /// The stored value and its ETag are what they were: a 412 changed nothing.
    static func expectUnchanged(_ client: WireClient, _ key: String, _ value: String, _ tag: String,
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let get = try client.get(key)
        #expect(get.status == 200, sourceLocation: sourceLocation)
        #expect(get.text == value, "value changed to \(get.text)", sourceLocation: sourceLocation)
        #expect(get.header("ETag") == tag, sourceLocation: sourceLocation)
    }

    // MARK: - If-Match

    @Test func ifMatchOnPut() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag1 = try Self.store(client, "k", "1")
        // Mismatch: 412, nothing written.
        let stale = try client.put("k", Array("2".utf8), headers: [("If-Match", "\"not-the-tag\"")])
        S.expectError(stale, status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "k", "1", tag1)
        // Match: written, new tag.
        let ok = try client.put("k", Array("2".utf8), headers: [("If-Match", tag1)])
        #expect(ok.status == 204)
        let tag2 = try #require(ok.header("ETag"))
        #expect(tag2 != tag1)
        // The old tag no longer matches: this is what makes it a CAS.
        S.expectError(try client.put("k", Array("3".utf8), headers: [("If-Match", tag1)]), status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "k", "2", tag2)
        // A list holding the current tag matches.
        let listed = try client.put("k", Array("3".utf8), headers: [("If-Match", "\"nope\", \(tag2)")])
        #expect(listed.status == 204)
        // `*` matches any current value.
        let star = try client.put("k", Array("4".utf8), headers: [("If-Match", "*")])
        #expect(star.status == 204)
        #expect(try client.get("k").text == "4")
    }

    @Test func ifMatchOnAbsentKeyIs412ForEveryWrite() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        for tag in ["*", "\"v1\""] {
            S.expectError(try client.put("absent", Array("x".utf8), headers: [("If-Match", tag)]),
                          status: 412, code: "precondition_failed")
            S.expectError(try client.send("DELETE", "/store/absent", headers: [("If-Match", tag)]),
                          status: 412, code: "precondition_failed")
            S.expectError(try client.send("POST", "/store/absent", headers: [("If-Match", tag), ("Content-Type", "application/json")],
                                          body: Array("1".utf8)),
                          status: 412, code: "precondition_failed")
            S.expectError(try client.send("PATCH", "/store/absent", headers: [("If-Match", tag), ("Content-Type", "application/merge-patch+json")],
                                          body: Array("{\"a\":1}".utf8)),
                          status: 412, code: "precondition_failed")
            // None of them created the key.
            S.expectError(try client.get("absent"), status: 404, code: "not_found")
        }
        // An expired key is absent for If-Match too.
        #expect(try client.send("PUT", "/store/short?ttl=1", body: Array("x".utf8)).status == 201)
        Thread.sleep(forTimeInterval: 1.3)
        S.expectError(try client.put("short", Array("y".utf8), headers: [("If-Match", "*")]), status: 412, code: "precondition_failed")
    }

    @Test func ifMatchOnDelete() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "d", "keep")
        S.expectError(try client.send("DELETE", "/store/d", headers: [("If-Match", "\"other\"")]),
                      status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "d", "keep", tag)
        let delete = try client.send("DELETE", "/store/d", headers: [("If-Match", tag)])
        #expect(delete.status == 204)
        #expect(try client.get("d").status == 404)
        // `*` deletes whatever is there.
        _ = try Self.store(client, "d2", "x")
        #expect(try client.send("DELETE", "/store/d2", headers: [("If-Match", "*")]).status == 204)
        #expect(try client.get("d2").status == 404)
    }

    @Test func ifMatchOnAppendAndPatch() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "list", "[1]")
        let json = ("Content-Type", "application/json")
        // POST append.
        S.expectError(try client.send("POST", "/store/list", headers: [("If-Match", "\"old\""), json], body: Array("2".utf8)),
                      status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "list", "[1]", tag)
        let append = try client.send("POST", "/store/list", headers: [("If-Match", tag), json], body: Array("2".utf8))
        #expect(append.status == 200)
        #expect(append.json?["count"] as? Int == 2)
        let tag2 = try #require(append.header("ETag"))
        #expect(tag2 != tag)
        // The old tag is stale now.
        S.expectError(try client.send("POST", "/store/list", headers: [("If-Match", tag), json], body: Array("3".utf8)),
                      status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "list", "[1,2]", tag2)

        // PATCH.
        let doc = try Self.store(client, "doc", "{\"a\":1}")
        let mp = ("Content-Type", "application/merge-patch+json")
        S.expectError(try client.send("PATCH", "/store/doc", headers: [("If-Match", tag), mp], body: Array("{\"a\":2}".utf8)),
                      status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "doc", "{\"a\":1}", doc)
        let patch = try client.send("PATCH", "/store/doc", headers: [("If-Match", doc), mp], body: Array("{\"a\":2}".utf8))
        #expect(patch.status == 200)
        #expect(patch.json?["a"] as? Int == 2)
        let doc2 = try #require(patch.header("ETag"))
        #expect(doc2 != doc)
        #expect(try client.get("doc").header("ETag") == doc2)
        S.expectError(try client.send("PATCH", "/store/doc", headers: [("If-Match", doc), mp], body: Array("{\"a\":3}".utf8)),
                      status: 412, code: "precondition_failed")
        #expect(try client.get("doc").json?["a"] as? Int == 2)
    }

    /// The gzip representation has its own tag ("…-gz"); If-Match and
    /// If-None-Match accept either tag of the current version.
    @Test func gzipTagIsAcceptedForTheCurrentVersion() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "g", String(repeating: "gzip me ", count: 1000))
        let gz = try client.get("g", headers: [("Accept-Encoding", "gzip")])
        #expect(gz.status == 200)
        #expect(gz.header("Content-Encoding") == "gzip")
        let gzTag = try #require(gz.header("ETag"))
        #expect(gzTag != tag)
        #expect(gzTag == String(tag.dropLast()) + "-gz\"", "gzip tag \(gzTag) for \(tag)")
        // If-None-Match with the gzip tag on an identity GET: same version, 304.
        #expect(try client.get("g", headers: [("If-None-Match", gzTag)]).status == 304)
        // And the identity tag on a gzip GET.
        let gz304 = try client.get("g", headers: [("If-None-Match", tag), ("Accept-Encoding", "gzip")])
        #expect(gz304.status == 304)
        #expect(gz304.header("ETag") == gzTag)
        // If-Match with the gzip tag writes.
        let put = try client.put("g", Array("new".utf8), headers: [("If-Match", gzTag)])
        #expect(put.status == 204)
        let newTag = try #require(put.header("ETag"))
        // The old gzip tag is stale like the old identity tag.
        S.expectError(try client.put("g", Array("newer".utf8), headers: [("If-Match", gzTag)]), status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "g", "new", newTag)
        // A made-up suffix is no tag of this version.
        S.expectError(try client.put("g", Array("newer".utf8), headers: [("If-Match", String(newTag.dropLast()) + "-zz\"")]),
                      status: 412, code: "precondition_failed")
        #expect(try client.send("DELETE", "/store/g", headers: [("If-Match", String(newTag.dropLast()) + "-gz\"")]).status == 204)
    }

    // MARK: - If-None-Match

    @Test func ifNoneMatchStarIsCreateOnly() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let first = try client.put("once", Array("first".utf8), headers: [("If-None-Match", "*")])
        #expect(first.status == 201)
        let tag = try #require(first.header("ETag"))
        let second = try client.put("once", Array("second".utf8), headers: [("If-None-Match", "*")])
        S.expectError(second, status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "once", "first", tag)
        // After a delete it can be created again.
        #expect(try client.delete("once").status == 204)
        #expect(try client.put("once", Array("third".utf8), headers: [("If-None-Match", "*")]).status == 201)
        #expect(try client.get("once").text == "third")
        // An expired key counts as absent.
        #expect(try client.send("PUT", "/store/ttl?ttl=1", body: Array("old".utf8)).status == 201)
        S.expectError(try client.put("ttl", Array("x".utf8), headers: [("If-None-Match", "*")]), status: 412, code: "precondition_failed")
        Thread.sleep(forTimeInterval: 1.3)
        #expect(try client.put("ttl", Array("fresh".utf8), headers: [("If-None-Match", "*")]).status == 201)
        #expect(try client.get("ttl").text == "fresh")
    }

    @Test func ifNoneMatchOnGetIs304WithValidatorsAndNoBody() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "doc", "{\"v\":1}")
        let full = try client.get("doc")
        let lastModified = try #require(full.header("Last-Modified"))
        // One raw connection: a 304 with a body would break the next response.
        let connection = try server.connection(timeout: 5)
        let notModified = try connection.request("GET", "/store/doc", headers: [("If-None-Match", tag)])
        #expect(notModified.status == 304)
        #expect(notModified.header("ETag") == tag)
        #expect(notModified.header("Vary") == "Accept-Encoding")
        #expect(notModified.header("Last-Modified") == lastModified)
        #expect(notModified.header("Cache-Control") == "no-cache")
        #expect(notModified.header("Content-Length") == nil || notModified.header("Content-Length") == "0")
        #expect(notModified.header("Transfer-Encoding") == nil)
        let next = try connection.request("GET", "/store/doc")
        #expect(next.status == 200)
        #expect(next.text == "{\"v\":1}")
        // A tag in a list, and several field lines, match too.
        #expect(try client.get("doc", headers: [("If-None-Match", "\"a\", \(tag)")]).status == 304)
        #expect(try client.get("doc", headers: [("If-None-Match", "\"a\""), ("If-None-Match", tag)]).status == 304)
        // `*` on GET of an existing value: 304.
        #expect(try client.get("doc", headers: [("If-None-Match", "*")]).status == 304)
        // Another tag: the full value.
        let other = try client.get("doc", headers: [("If-None-Match", "\"something-else\"")])
        #expect(other.status == 200)
        #expect(other.text == "{\"v\":1}")
        // After a change the old tag gets the new value.
        let tag2 = try Self.store(client, "doc", "{\"v\":2}")
        let changed = try client.get("doc", headers: [("If-None-Match", tag)])
        #expect(changed.status == 200)
        #expect(changed.text == "{\"v\":2}")
        #expect(changed.header("ETag") == tag2)
    }

    @Test func ifNoneMatchOnHeadIs304AndOnPutIs412() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "h", "hello")
        let head = try client.head("h", headers: [("If-None-Match", tag)])
        #expect(head.status == 304)
        #expect(head.header("ETag") == tag)
        #expect(try client.head("h", headers: [("If-None-Match", "\"x\"")]).status == 200)
        // A write whose If-None-Match matches: 412, not 304.
        let put = try client.put("h", Array("bye".utf8), headers: [("If-None-Match", tag)])
        S.expectError(put, status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "h", "hello", tag)
        // DELETE likewise.
        S.expectError(try client.send("DELETE", "/store/h", headers: [("If-None-Match", tag)]), status: 412, code: "precondition_failed")
        S.expectError(try client.send("DELETE", "/store/h", headers: [("If-None-Match", "*")]), status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "h", "hello", tag)
        // A non-matching tag lets the write through.
        #expect(try client.put("h", Array("bye".utf8), headers: [("If-None-Match", "\"x\"")]).status == 204)
        #expect(try client.get("h").text == "bye")
    }

    /// Weak comparison for If-None-Match, strong for If-Match.
    @Test func weakTagsMatchIfNoneMatchButNotIfMatch() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "w", "value")
        let weak = "W/" + tag
        #expect(try client.get("w", headers: [("If-None-Match", weak)]).status == 304)
        #expect(try client.head("w", headers: [("If-None-Match", weak)]).status == 304)
        S.expectError(try client.put("w", Array("v2".utf8), headers: [("If-None-Match", weak)]), status: 412, code: "precondition_failed")
        // If-Match with the weak form of the current tag never matches.
        S.expectError(try client.put("w", Array("v2".utf8), headers: [("If-Match", weak)]), status: 412, code: "precondition_failed")
        S.expectError(try client.send("DELETE", "/store/w", headers: [("If-Match", weak)]), status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "w", "value", tag)
        #expect(try client.put("w", Array("v2".utf8), headers: [("If-Match", tag)]).status == 204)
    }

    // MARK: - Dates

    @Test func ifModifiedSince() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "m", "dated")
        let get = try client.get("m")
        let lastModified = try #require(get.header("Last-Modified"))
        #expect(StoreValuesTests.httpDate(lastModified) != nil, "Last-Modified is an HTTP date: \(lastModified)")
        // Not modified since its own Last-Modified: 304.
        let same = try client.get("m", headers: [("If-Modified-Since", lastModified)])
        #expect(same.status == 304)
        #expect(same.body.isEmpty)
        #expect(same.header("ETag") == tag)
        #expect(same.header("Last-Modified") == lastModified)
        #expect(try client.head("m", headers: [("If-Modified-Since", lastModified)]).status == 304)
        // Modified since an older date: 200 with the value.
        let older = try client.get("m", headers: [("If-Modified-Since", Self.longAgo)])
        #expect(older.status == 200)
        #expect(older.text == "dated")
        // An invalid date is ignored.
        #expect(try client.get("m", headers: [("If-Modified-Since", "yesterday")]).status == 200)
        // If-Modified-Since does not apply to writes.
        #expect(try client.put("m", Array("rewritten".utf8), headers: [("If-Modified-Since", lastModified)]).status == 204)
        // Absent key: 404, not 304.
        #expect(try client.get("nothing", headers: [("If-Modified-Since", Self.farFuture)]).status == 404)
    }

    @Test func ifUnmodifiedSince() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "u", "v1")
        let lastModified = try #require(try client.get("u").header("Last-Modified"))
        // Modified after the given date: 412, value unchanged.
        S.expectError(try client.put("u", Array("v2".utf8), headers: [("If-Unmodified-Since", Self.longAgo)]),
                      status: 412, code: "precondition_failed")
        S.expectError(try client.send("DELETE", "/store/u", headers: [("If-Unmodified-Since", Self.longAgo)]),
                      status: 412, code: "precondition_failed")
        S.expectError(try client.get("u", headers: [("If-Unmodified-Since", Self.longAgo)]),
                      status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "u", "v1", tag)
        // Not modified since its own date: the write goes through.
        #expect(try client.put("u", Array("v2".utf8), headers: [("If-Unmodified-Since", lastModified)]).status == 204)
        #expect(try client.put("u", Array("v3".utf8), headers: [("If-Unmodified-Since", Self.farFuture)]).status == 204)
        #expect(try client.get("u").text == "v3")
        // No current value, no date to compare: ignored, so a PUT creates.
        #expect(try client.put("new", Array("x".utf8), headers: [("If-Unmodified-Since", Self.longAgo)]).status == 201)
    }

    /// RFC 9110 13.2.2: If-Match is evaluated instead of If-Unmodified-Since,
    /// If-None-Match instead of If-Modified-Since.
    @Test func evaluationOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "o", "v1")
        // A matching If-Match wins over a failing If-Unmodified-Since.
        let write = try client.put("o", Array("v2".utf8), headers: [("If-Match", tag), ("If-Unmodified-Since", Self.longAgo)])
        #expect(write.status == 204, "If-Unmodified-Since must be ignored when If-Match is present: \(write.status)")
        let tag2 = try #require(write.header("ETag"))
        // A failing If-Match is not rescued by a holding If-Unmodified-Since.
        S.expectError(try client.put("o", Array("v3".utf8), headers: [("If-Match", tag), ("If-Unmodified-Since", Self.farFuture)]),
                      status: 412, code: "precondition_failed")
        try Self.expectUnchanged(client, "o", "v2", tag2)
        let lastModified2 = try #require(try client.get("o").header("Last-Modified"))
        // A non-matching If-None-Match wins over an If-Modified-Since that would say 304.
        let get = try client.get("o", headers: [("If-None-Match", "\"other\""), ("If-Modified-Since", lastModified2)])
        #expect(get.status == 200, "If-Modified-Since must be ignored when If-None-Match is present: \(get.status)")
        #expect(get.text == "v2")
        // A matching If-None-Match wins over an If-Modified-Since that would say 200.
        let notModified = try client.get("o", headers: [("If-None-Match", tag2), ("If-Modified-Since", Self.longAgo)])
        #expect(notModified.status == 304)
        // If-Match passes, then If-None-Match fails: 304 on GET.
        #expect(try client.get("o", headers: [("If-Match", tag2), ("If-None-Match", tag2)]).status == 304)
        // If-Match fails first: 412 on GET even though If-None-Match would give 304.
        S.expectError(try client.get("o", headers: [("If-Match", tag), ("If-None-Match", tag2)]),
                      status: 412, code: "precondition_failed")
    }

    // MARK: - Protocol

    /// A failing precondition is answered before the body is asked for, on
    /// either store (PostgreSQL asks for the row's metadata asynchronously).
    @Test func expectContinueWithFailingIfMatchGets412WithoutContinue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try Self.store(client, "e", "original")
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/e HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\nIf-Match: \"stale\"\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse(skipInterim: false)
        #expect(response.status == 412, "first answer must be the final 412, got \(response.status)")
        S.expectError(response, status: 412, code: "precondition_failed")
        // The body was never read, so the connection cannot go on.
        ProtocolWire.expectCloses(response, connection)
        try Self.expectUnchanged(client, "e", "original", tag)
        // The same for an append.
        let append = try server.connection(timeout: 5)
        try append.send("POST /store/e HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1\r\nIf-Match: \"stale\"\r\nExpect: 100-continue\r\n\r\n")
        #expect(try append.readResponse(skipInterim: false).status == 412)
        // Without Expect the body is sent at once: the 412 reads past it and
        // the connection carries on with the next (pipelined) request.
        let plain = try server.connection(timeout: 5)
        try plain.send("PUT /store/e HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\nIf-Match: \"stale\"\r\n\r\nimposterGET /store/e HTTP/1.1\r\nHost: x\r\n\r\n")
        S.expectError(try plain.readResponse(), status: 412, code: "precondition_failed")
        let next = try plain.readResponse()
        #expect(next.status == 200)
        #expect(next.text == "original")
        // Control: the current tag gets 100 Continue, then the write.
        let good = try server.connection(timeout: 5)
        try good.send("PUT /store/e HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\nIf-Match: \(tag)\r\nExpect: 100-continue\r\n\r\n")
        #expect(try good.readResponse(skipInterim: false).status == 100)
        try good.send("replaced")
        #expect(try good.readResponse(skipInterim: false).status == 204)
        #expect(try client.get("e").text == "replaced")
        // If-None-Match: * on an existing key: 412 without 100 as well.
        let create = try server.connection(timeout: 5)
        try create.send("PUT /store/e HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nIf-None-Match: *\r\nExpect: 100-continue\r\n\r\n")
        #expect(try create.readResponse(skipInterim: false).status == 412)
    }

    @Test func cacheControlNoCache() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        _ = try Self.store(client, "c", "v1")
        // Value answers tell caches to revalidate every time.
        let get = try client.get("c")
        #expect(get.header("Cache-Control") == "no-cache")
        #expect(try client.head("c").header("Cache-Control") == "no-cache")
        #expect(try client.get("c", headers: [("Accept-Encoding", "gzip")]).header("Cache-Control") == "no-cache")
        // A client asking for no cached copy gets the current value, and
        // revalidation with the tag still works.
        let tag2 = try Self.store(client, "c", "v2")
        let fresh = try client.get("c", headers: [("Cache-Control", "no-cache")])
        #expect(fresh.status == 200)
        #expect(fresh.text == "v2")
        #expect(fresh.header("Cache-Control") == "no-cache")
        #expect(try client.get("c", headers: [("Cache-Control", "no-cache"), ("If-None-Match", tag2)]).status == 304)
    }

    // MARK: - Concurrency

    /// A compare-and-swap counter incremented by 4 separate OS processes
    /// (Python, stdlib http.client), 50 times each: GET, then PUT with
    /// If-Match, retry on 412. No update may be lost.
    @Test func compareAndSwapCounterAcrossProcesses() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("counter", "0", contentType: "text/plain").status == 201)
        let gate = NSTemporaryDirectory() + "larder-cas-go-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: gate) }
        let script = """
        import http.client, os, sys, time
        port, key, n, gate = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
        deadline = time.time() + 30
        while not os.path.exists(gate):
            if time.time() > deadline: sys.exit("no start signal")
            time.sleep(0.002)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        done = conflicts = 0
        while done < n:
            c.request("GET", "/store/" + key)
            r = c.getresponse(); body = r.read()
            if r.status != 200: sys.exit("GET %d %r" % (r.status, body))
            tag = r.getheader("ETag")
            if not tag: sys.exit("GET without ETag")
            value = int(body)
            c.request("PUT", "/store/" + key, body=str(value + 1).encode(),
                      headers={"If-Match": tag, "Content-Type": "text/plain"})
            r = c.getresponse(); body = r.read()
            if r.status == 204: done += 1
            elif r.status == 412: conflicts += 1
            else: sys.exit("PUT %d %r" % (r.status, body))
        print(conflicts)
        """
        // Four at once, each on its own thread (PythonRunner waits for its process).
        let port = String(server.port)
        let runs = (0..<4).map { _ in
            Background { try PythonRunner.run(code: script, arguments: [port, "counter", "50", gate], timeout: 120) }
        }
        // All four are up (or soon); let them go at once.
        _ = FileManager.default.createFile(atPath: gate, contents: Data())
        var conflicts = 0
        for (i, run) in runs.enumerated() {
            let result = try run.wait(150)
            #expect(result.status == 0 && !result.timedOut, "process \(i) exited \(result.status): \(result.stderr)")
            conflicts += Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        let final = try client.get("counter")
        #expect(final.status == 200)
        #expect(final.text == "200", "lost updates: counter is \(final.text) after 200 increments (\(conflicts) conflicts retried)")
    }

    /// 16 clients race to create one key with If-None-Match: *; exactly one
    /// wins, the rest get 412, and the stored value is the winner's. 20 keys.
    @Test func racingCreateOnlyPutsHaveOneWinner() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        let threads = 16, rounds = 20
        let results = ResultTable(rounds: rounds, threads: threads)
        let barrier = Barrier(threads)
        let errors = S.onThreads(threads) { t in
            let client = WireClient(port: port)
            _ = try client.send("GET", "/healthz")  // connect before the race
            for round in 0..<rounds {
                barrier.wait()
                let put = try client.put("race/\(round)", Array("thread \(t)".utf8), headers: [("If-None-Match", "*")])
                results.set(round, t, put.status)
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        let client = server.client()
        for round in 0..<rounds {
            let statuses = results.row(round)
            let winners = statuses.indices.filter { statuses[$0] == 201 }
            #expect(winners.count == 1, "round \(round): \(statuses)")
            #expect(statuses.filter { $0 == 412 }.count == threads - 1, "round \(round): \(statuses)")
            if let winner = winners.first {
                #expect(try client.get("race/\(round)").text == "thread \(winner)", "round \(round)")
            }
        }
    }

    /// Statuses by round and thread, written from many threads.
    final class ResultTable: @unchecked Sendable {
        private let lock = NSLock()
        private var table: [[Int]]
        init(rounds: Int, threads: Int) { table = Array(repeating: Array(repeating: 0, count: threads), count: rounds) }
        func set(_ round: Int, _ thread: Int, _ status: Int) { lock.lock(); table[round][thread] = status; lock.unlock() }
        func row(_ round: Int) -> [Int] { lock.lock(); defer { lock.unlock() }; return table[round] }
    }

    /// A reusable barrier: `wait` returns once `count` threads are waiting.
    final class Barrier: @unchecked Sendable {
        private let condition = NSCondition()
        private let count: Int
        private var waiting = 0
        private var generation = 0
        init(_ count: Int) { self.count = count }
        func wait() {
            condition.lock()
            defer { condition.unlock() }
            let mine = generation
            waiting += 1
            if waiting == count {
                waiting = 0
                generation += 1
                condition.broadcast()
                return
            }
            while generation == mine { condition.wait() }
        }
    }
}
