import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// docs/http-api.md "Snapshots": `GET /snapshot?prefix=` streams NDJSON, `POST
/// /snapshot` restores it (`?replace=1`), exactly, against real servers.
/// Lines are read here with Foundation's JSON and base64, not the server's.
@Suite(.blockingLane) struct SnapshotTests {
    // MARK: - Helpers

    /// `GET /snapshot` (with a query), checked for status and framing.
    static func snapshot(_ client: WireClient, _ query: String = "",
                         sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        let response = try client.send("GET", "/snapshot" + (query.isEmpty ? "" : "?" + query))
        #expect(response.status == 200, "GET /snapshot: \(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/x-ndjson", sourceLocation: sourceLocation)
        #expect(response.header("Transfer-Encoding")?.lowercased() == "chunked", sourceLocation: sourceLocation)
        return response.body
    }

    static func restore(_ client: WireClient, _ document: [UInt8], _ query: String = "",
                        headers: [(String, String)] = []) throws -> ClientResponse {
        try client.send("POST", "/snapshot" + (query.isEmpty ? "" : "?" + query), headers: headers, body: document)
    }

    /// `{"restored": N, "skipped": M}` or a test failure.
    static func expectRestored(_ response: ClientResponse, _ restored: Int, skipped: Int = 0,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 200, "POST /snapshot: \(response.status) \(response.text)", sourceLocation: sourceLocation)
        let json = response.json
        #expect(json?["restored"] as? Int == restored, "\(response.text)", sourceLocation: sourceLocation)
        #expect(json?["skipped"] as? Int == skipped, "\(response.text)", sourceLocation: sourceLocation)
    }

    /// The document's lines, without the final line feed.
    static func lines(_ document: [UInt8]) -> [[UInt8]] {
        var lines = document.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        if lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }

    static func object(_ line: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> [String: Any] {
        let object = (try? JSONSerialization.jsonObject(with: Data(line), options: [.fragmentsAllowed])) as? [String: Any]
        #expect(object != nil, "not a JSON object: \(String(decoding: line.prefix(200), as: UTF8.self))", sourceLocation: sourceLocation)
        return object ?? [:]
    }

    /// The line of each key, by the key's UTF-8 (Swift's String equality
    /// would take NFC and NFD spellings, two keys, for one).
    static func byKey(_ document: [UInt8]) -> [[UInt8]: [UInt8]] {
        var out: [[UInt8]: [UInt8]] = [:]
        for line in lines(document) { out[Array((object(line)["key"] as? String ?? "?").utf8)] = line }
        return out
    }

    static func keys(_ document: [UInt8]) -> [String] {
        lines(document).map { object($0)["key"] as? String ?? "?" }
    }

    /// Base64 characters for `count` bytes.
    static func base64Count(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Which value member a line has.
    static func form(_ object: [String: Any]) -> String {
        ["json", "text", "base64"].filter { object[$0] != nil }.joined(separator: "+")
    }

    static func line(_ members: String) -> [UInt8] { Array(("{" + members + "}\n").utf8) }

    /// The document as chunked coding in pieces of `size` bytes (so lines,
    /// escapes and UTF-8 sequences are cut anywhere).
    static func chunked(_ body: [UInt8], size: Int) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        while offset < body.count {
            let n = min(size, body.count - offset)
            out += Array((String(n, radix: 16) + "\r\n").utf8) + body[offset..<(offset + n)] + [0x0D, 0x0A]
            offset += n
        }
        return out + Array("0\r\n\r\n".utf8)
    }

    // MARK: - Round trip

    @Test func mixedValuesRoundTripExactlyIntoAFreshServer() throws {
        let source = try TestServer()
        defer { source.stop() }
        let a = source.client()
        let compactJSON = Array(#"{"id":7,"tags":["a","b"],"n":1.50,"s":"\u00e9\"x"}"#.utf8)
        let spacedJSON = Array(#"{"a": 1,  "b": [true, null]}"#.utf8)
        let prettyJSON = Array("{\n  \"name\": \"Ada\",\n  \"n\": 1e3\n}\n".utf8)
        let paddedJSON = Array(" [1,2] ".utf8)
        let text = Array("Grüße, 世界 😀\ttab \"quoted\" back\\slash\u{2028}end".utf8)
        let binary = [UInt8](0...255) + [0, 0, 0xFF, 0xFE, 0] + Bytes.random(count: 5000, seed: 3)
        let nulText = Array("a\u{0}b".utf8)
        let gzipped = Array(String(repeating: "gzip line\n", count: 300).utf8)
        let values: [(key: String, bytes: [UInt8], type: String?, headers: [(String, String)], query: String)] = [
            ("json/compact", compactJSON, "application/json", [], ""),
            ("json/spaced", spacedJSON, "application/vnd.larder+json; charset=utf-8", [], ""),
            ("json/pretty", prettyJSON, "application/json", [], ""),
            ("json/padded", paddedJSON, "application/json", [], ""),
            ("json/not-json", Array("{nope".utf8), "application/json", [], ""),
            ("json/typed-as-text", compactJSON, "text/plain", [], ""),
            ("text/utf8", text, "text/plain; charset=utf-8", [], ""),
            ("bin/nul-bytes", binary, nil, [], ""),
            ("bin/nul-text", nulText, "application/octet-stream", [], ""),
            ("empty", [], "text/plain", [], ""),
            ("gz/value", S.gzip(gzipped), "text/plain", [("Content-Encoding", "gzip")], ""),
            ("ünï/çødé/😀", Array("unicode key".utf8), nil, [], ""),
            ("nfc/\u{E9}", Array("nfc".utf8), nil, [], ""),
            ("nfc/e\u{301}", Array("nfd".utf8), nil, [], ""),
            ("ttl/session", Array("expires later".utf8), "text/plain", [], "?ttl=1000"),
        ]
        for v in values {
            var headers = v.headers
            if let type = v.type { headers.append(("Content-Type", type)) }
            let put = try a.send("PUT", "/store/" + S.encode(v.key) + v.query, headers: headers, body: v.bytes)
            #expect(put.status == 201, "PUT \(v.key): \(put.status) \(put.text)")
        }
        let document = try Self.snapshot(a)
        let lines = Self.byKey(document)
        #expect(lines.count == values.count)
        S.expectKeys(Self.keys(document), S.byteSorted(values.map(\.key)), "keys come in byte order")

        // The forms chosen: JSON verbatim when it can be, text for UTF-8, base64 else.
        let expectedForm = ["json/compact": "json", "json/spaced": "json", "json/pretty": "text", "json/padded": "text",
                            "json/not-json": "text", "json/typed-as-text": "text", "text/utf8": "text",
                            "bin/nul-bytes": "base64", "bin/nul-text": "base64", "empty": "text", "gz/value": "text"]
        for (key, form) in expectedForm {
            #expect(Self.form(Self.object(lines[Array(key.utf8)] ?? [])) == form, "form of \(key)")
        }
        // Verbatim: the stored bytes appear in the line as they are.
        let spacedLine = try #require(lines[Array("json/spaced".utf8)])
        #expect(String(decoding: spacedLine, as: UTF8.self).hasSuffix("\"json\":" + String(decoding: spacedJSON, as: UTF8.self) + "}"))
        // Members in the documented order, the value last.
        let first = String(decoding: try #require(lines[Array("text/utf8".utf8)]), as: UTF8.self)
        let order = ["\"key\":", "\"contentType\":", "\"expires\":", "\"modified\":", "\"etag\":", "\"text\":"]
            .map { first.range(of: $0)?.lowerBound }
        #expect(order.allSatisfy { $0 != nil } && zip(order, order.dropFirst()).allSatisfy { $0! < $1! }, "member order: \(first)")
        let ttlLine = Self.object(try #require(lines[Array("ttl/session".utf8)]))
        let ttlExpires = try #require(ExpiryTests.isoDate(ttlLine["expires"] as? String ?? ""))
        #expect(abs(ttlExpires.timeIntervalSinceNow - 1000) < 60, "expires: \(ttlLine["expires"] ?? "nil")")
        #expect(Self.object(try #require(lines[Array("empty".utf8)]))["expires"] is NSNull)

        // Into a fresh server, then compared value by value.
        let target = try TestServer()
        defer { target.stop() }
        let b = target.client()
        Self.expectRestored(try Self.restore(b, document), values.count)
        for v in values {
            let was = try S.get(a, key: v.key)
            let now = try S.get(b, key: v.key)
            #expect(now.status == 200, "GET \(v.key) after restore: \(now.status)")
            #expect(S.same(now.body, was.body), "bytes of \(v.key)")
            #expect(now.header("Content-Type") == was.header("Content-Type"), "Content-Type of \(v.key)")
            // Larder-Expires rounds up to the second, and the line keeps milliseconds.
            let expiresWas = ExpiryTests.httpDate(was.header("Larder-Expires")), expiresNow = ExpiryTests.httpDate(now.header("Larder-Expires"))
            #expect((expiresWas == nil) == (expiresNow == nil), "expiry of \(v.key)")
            if let expiresWas, let expiresNow { #expect(abs(expiresWas.timeIntervalSince(expiresNow)) <= 1, "expiry of \(v.key)") }
        }
        #expect(try S.get(b, key: "gz/value").body == gzipped, "a gzip upload restores as its value")
        #expect(try S.get(b, key: "ttl/session").header("Larder-Expires") != nil)
        // The restored store snapshots to the same document but for versions and times.
        let again = Self.byKey(try Self.snapshot(b))
        #expect(again.count == lines.count)
        for (key, line) in lines {
            var x = Self.object(line), y = Self.object(again[key] ?? [])
            for volatile in ["modified", "etag"] { x[volatile] = nil; y[volatile] = nil }
            #expect(NSDictionary(dictionary: x).isEqual(to: y), "line of \(String(decoding: key, as: UTF8.self)) after the round trip")
        }
    }

    @Test func emptyStoreIsAnEmptyDocumentAndHeadHasNoBody() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try Self.snapshot(client).isEmpty)
        let head = try client.send("HEAD", "/snapshot")
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "application/x-ndjson")
        #expect(head.body.isEmpty)
        S.expectError(try client.send("PUT", "/snapshot", body: []), status: 405, code: "method_not_allowed")
        #expect(try client.send("DELETE", "/snapshot").header("Allow") == "GET, HEAD, POST, OPTIONS")
        Self.expectRestored(try Self.restore(client, []), 0)
        #expect(try client.get("anything").status == 404)
    }

    @Test func anHTTP10ReaderGetsTheDocumentEndedByClose() throws {
        let server = try TestServer()
        defer { server.stop() }
        #expect(try server.client().put("k", "v").status == 201)
        let connection = try server.connection()
        try connection.send("GET /snapshot HTTP/1.0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.header("Transfer-Encoding") == nil)
        #expect(Self.object(Self.lines(response.body).first ?? [])["text"] as? String == "v")
    }

    // MARK: - Prefix

    @Test func prefixSelectsWholeSegments() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        for key in ["users", "users/1", "users/2/deep", "usersX/1", "other/users/3", "a"] {
            #expect(try client.put(key, key).status == 201)
        }
        for query in ["prefix=users/", "prefix=users", "prefix=users%2F"] {
            #expect(Self.keys(try Self.snapshot(client, query)) == ["users/1", "users/2/deep"], "\(query)")
        }
        #expect(Self.lines(try Self.snapshot(client, "prefix=")).count == 6)
        #expect(try Self.snapshot(client, "prefix=nothing/").isEmpty)
        S.expectError(try client.send("GET", "/snapshot?prefix=a/../b/"), status: 400, code: "invalid_key")
        S.expectError(try client.send("GET", "/snapshot?prefix=a//b/"), status: 400, code: "invalid_key")
        S.expectError(try client.send("POST", "/snapshot?prefix=%2e%2e/", body: []), status: 400, code: "invalid_key")
    }

    @Test func manyKeysArePagedThroughInOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // More than one page of the listing (1000 keys), in two directories.
        var keys: [String] = []
        for i in 0..<1150 { keys.append(String(format: "p/%@/%05d", i % 2 == 0 ? "even" : "odd", i)) }
        for key in keys { #expect(try client.put(key, Array(key.utf8)).status == 201) }
        let document = try Self.snapshot(client, "prefix=p/")
        let listed = Self.lines(document).map { Self.object($0) }
        #expect(listed.map { $0["key"] as? String ?? "" } == S.byteSorted(keys))
        #expect(listed.allSatisfy { $0["text"] as? String == $0["key"] as? String })
    }

    // MARK: - Restore modes

    @Test func replaceClearsThePrefixAndMergeKeepsWhatIsThere() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        for (key, value) in [("users/1", "one"), ("users/2", "two"), ("groups/1", "g")] {
            #expect(try client.put(key, value).status == 201)
        }
        let users = try Self.snapshot(client, "prefix=users/")
        #expect(try client.put("users/1", "changed").status == 204)
        #expect(try client.put("users/3", "new").status == 201)

        // Merge: restored keys are overwritten, others stay.
        Self.expectRestored(try Self.restore(client, users, "prefix=users/"), 2)
        #expect(try client.get("users/1").text == "one")
        #expect(try client.get("users/3").text == "new")

        // Replace: the prefix is exactly the snapshot afterwards; other prefixes stay.
        #expect(try client.put("users/1", "changed").status == 204)
        Self.expectRestored(try Self.restore(client, users, "prefix=users/&replace=1"), 2)
        #expect(try client.get("users/1").text == "one")
        #expect(try client.get("users/3").status == 404)
        #expect(try client.get("groups/1").text == "g")

        // A key outside the prefix is refused, and a bad first line leaves the store as it was.
        let all = try Self.snapshot(client)
        let refused = try Self.restore(client, all, "prefix=users/&replace=1")
        S.expectError(refused, status: 400, code: "invalid_snapshot")
        #expect((refused.json?["message"] as? String)?.hasPrefix("line 1: ") == true, "\(refused.text)")
        #expect(try client.get("users/2").text == "two")

        // Replace of everything with an empty document: the reset of a test run.
        Self.expectRestored(try Self.restore(client, [], "replace=1"), 0)
        #expect(Self.lines(try Self.snapshot(client)).isEmpty)
        // And back.
        Self.expectRestored(try Self.restore(client, all, "replace=1"), 3)
        #expect(Self.lines(try Self.snapshot(client)).count == 3)
    }

    @Test func expiredLinesAreSkippedAndCounted() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        var document = Self.line(#""key":"e/past","expires":"2001-01-01T00:00:00.000Z","text":"gone""#)
        document += Self.line(#""key":"e/future","expires":"2099-01-01T00:00:00+02:00","contentType":"text/x","text":"kept""#)
        document += Self.line(#""key":"e/none","expires":null,"base64":"AAEC""#)
        Self.expectRestored(try Self.restore(client, document), 2, skipped: 1)
        #expect(try client.get("e/past").status == 404)
        let future = try client.get("e/future")
        #expect(future.text == "kept")
        #expect(future.header("Content-Type") == "text/x")
        #expect(future.header("Larder-Expires") == "Wed, 31 Dec 2098 22:00:00 GMT")
        let none = try client.get("e/none")
        #expect(none.body == [0, 1, 2])
        #expect(none.header("Content-Type") == "application/octet-stream")
        #expect(none.header("Larder-Expires") == nil)
    }

    @Test func membersMayComeInAnyOrderAndUnknownOnesAreIgnored() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        var document = Self.line(#" "json" : { "b" : [1, 2.0e1] } , "future":{"x":[1]}, "key":"o/1","contentType":"application/json" "#)
        document += Array("\r\n   \n".utf8)  // CRLF and a blank line
        document += Self.line(#""text":"\u00e9\ud83d\ude00\/","key":"o/2""#)
        // 3 MiB of value before the key: past the point where value-last lines
        // start streaming, still within a buffered line.
        let value = Bytes.random(count: 3 << 20, seed: 33)
        document += Self.line(#""base64":"\#(Data(value).base64EncodedString())","contentType":"x/y","key":"o/big""#)
        document += Array(#"{"key":"o/3","text":"no final line feed"}"#.utf8)
        Self.expectRestored(try Self.restore(client, document), 4)
        #expect(try client.get("o/1").text == #"{ "b" : [1, 2.0e1] }"#)
        #expect(try client.get("o/2").text == "é😀/")
        #expect(try client.get("o/3").text == "no final line feed")
        let big = try client.get("o/big")
        #expect(big.header("Content-Type") == "x/y")
        #expect(S.same(big.body, value))
    }

    // MARK: - Malformed documents

    @Test func aMalformedLineIsRefusedWithItsNumberAndNothingIsApplied() throws {
        let good = Self.line(#""key":"m/ok","text":"fine""#)
        let bad: [(line: [UInt8], why: String)] = [
            (Array("not json\n".utf8), "not a JSON object"),
            (Array("[1,2]\n".utf8), "not a JSON object"),
            (Self.line(#""text":"no key""#), "no \"key\""),
            (Self.line(#""key":"m/x""#), "no value member"),
            (Self.line(#""key":"m/x","text":"a","base64":"YQ==""#), "one value member"),
            (Self.line(#""key":"m/x","key":"m/y","text":"a""#), "appears twice"),
            (Self.line(#""key":"m/x","base64":"YQ=""#), "base64"),
            (Self.line(#""key":"m/x","base64":"Y Q==""#), "base64"),
            (Self.line(#""key":"m/x","text":42"#), "must be a string"),
            (Self.line(#""key":"m/x","json":{"a":}"#), "not JSON"),
            (Array(#"{"key":"m/x","json":[1,2]} x"#.utf8) + [0x0A], "follows the object"),
            (Self.line(#""key":"m/../x","text":"a""#), "invalid key"),
            (Self.line(#""key":7,"text":"a""#), "must be a string"),
            (Self.line(#""key":"m/x","expires":"tomorrow","text":"a""#), "ISO 8601"),
            (Self.line(#""key":"m/x","contentType":"a\u0001b","text":"a""#), "content type"),
            (Self.line(#""key":"m/x","text":"a",}"#), "member name"),
        ]
        for (i, (line, why)) in bad.enumerated() {
            let server = try TestServer()
            defer { server.stop() }
            let client = server.client()
            // Line 1 is good, line 2 blank, line 3 bad, line 4 good.
            let response = try Self.restore(client, good + Array("\n".utf8) + line + Self.line(#""key":"m/after","text":"x""#))
            S.expectError(response, status: 400, code: "invalid_snapshot")
            let message = response.json?["message"] as? String ?? ""
            #expect(message.hasPrefix("line 3: "), "case \(i): \(message)")
            #expect(message.contains(why), "case \(i): \(message)")
            #expect(message.contains("nothing was applied"), "case \(i): \(message)")
            #expect(try client.get("m/ok").status == 404, "case \(i): not even the line before is restored")
            #expect(try client.get("m/x").status == 404, "case \(i)")
            #expect(try client.get("m/after").status == 404, "case \(i): nothing after the bad line")
        }
        // A document that ends inside its last line.
        let server = try TestServer()
        defer { server.stop() }
        let cut = try Self.restore(server.client(), good + Array(#"{"key":"m/x","text":"cut"#.utf8))
        S.expectError(cut, status: 400, code: "invalid_snapshot")
        #expect((cut.json?["message"] as? String)?.hasPrefix("line 2: the line ends inside its object") == true, "\(cut.text)")
        #expect(try server.client().get("m/ok").status == 404)
    }

    @Test func aValueOverTheSizeLimitIs413ButTheDocumentMayBeLarger() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 64 * 1024 }
        defer { server.stop() }
        let client = server.client()
        // Twenty 10 KiB values: 270 KiB of document, over the 64 KiB limit of one value.
        var document: [UInt8] = []
        for i in 0..<20 {
            let value = Bytes.random(count: 10 * 1024, seed: UInt64(i + 1))
            document += Self.line(#""key":"many/\#(i)","base64":"\#(Data(value).base64EncodedString())""#)
        }
        Self.expectRestored(try Self.restore(client, document), 20)
        // Chunked as well (the route's own limit, not the server's).
        Self.expectRestored(try Self.restore(client, Self.chunked(document, size: 50_000), headers: [("Transfer-Encoding", "chunked")]), 20)
        // One value over the limit: 413, and nothing is restored.
        let big = Data(Bytes.random(count: 64 * 1024 + 1, seed: 9)).base64EncodedString()
        let response = try Self.restore(client, Self.line(#""key":"ok","text":"x""#) + Self.line(#""key":"big","base64":"\#(big)""#))
        S.expectError(response, status: 413, code: "payload_too_large")
        #expect((response.json?["message"] as? String)?.hasPrefix("line 2: ") == true, "\(response.text)")
        #expect(try client.get("ok").status == 404)
        #expect(try client.get("big").status == 404)
        // An ordinary PUT is still held to the server's limit.
        S.expectError(try client.put("put", Bytes.random(count: 64 * 1024 + 1, seed: 1)), status: 413, code: "payload_too_large")
    }

    // MARK: - Large values and chunked bodies

    @Test func aLargeBase64ValueStreamsThroughBothWays() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Bytes.random(count: 20 << 20, seed: 20)
        #expect(try client.put("big/one", value, contentType: "application/x-blob").status == 201)
        #expect(try client.put("big/small", "after").status == 201)
        let document = try Self.snapshot(client, "prefix=big/")
        let lines = Self.lines(document)
        #expect(lines.count == 2)
        let line = Self.object(lines[0])
        #expect(Data(base64Encoded: line["base64"] as? String ?? "") == Data(value), "the streamed base64 is the value")

        let target = try TestServer()
        defer { target.stop() }
        let b = target.client()
        Self.expectRestored(try Self.restore(b, document), 2)
        let restored = try b.get("big/one")
        #expect(restored.header("Content-Type") == "application/x-blob")
        #expect(Bytes.crc32(restored.body) == Bytes.crc32(value) && restored.body.count == value.count)
        #expect(try b.get("big/small").text == "after")

        // The same document in 4093-byte chunks (cut inside lines and base64 groups).
        #expect(try b.deletePrefix().status == 200)
        Self.expectRestored(try Self.restore(b, Self.chunked(document, size: 4093), headers: [("Transfer-Encoding", "chunked")]), 2)
        #expect(Bytes.crc32(try b.get("big/one").body) == Bytes.crc32(value))
    }

    @Test func aLongTextLineStreamsWithEscapesCutAnywhere() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // 6 MiB of text with every kind of escape, over the 4 MiB of a buffered line.
        let unit = "line \"one\"\\ é 😀 \u{2028}\t\n"
        let text = String(repeating: unit, count: (6 << 20) / unit.utf8.count)
        var escaped = String(decoding: try JSONSerialization.data(withJSONObject: [text], options: [.fragmentsAllowed]), as: UTF8.self)
        escaped = String(escaped.dropFirst().dropLast())  // the string out of its array
        // Also a surrogate-pair escape and an escaped slash, as other writers make them.
        escaped = String(escaped.dropLast()) + #"\ud83d\ude00\/""#
        let expected = Array((text + "😀/").utf8)
        let document = Array(#"{"key":"long/text","contentType":"text/plain","etag":"ignored","text":"#.utf8) + Array(escaped.utf8) + Array("}\n".utf8)
            + Self.line(#""key":"long/next","text":"n""#)
        #expect(document.count > 6 << 20)
        // Content-Length, then chunks that cut escapes and UTF-8 sequences.
        for size in [0, 65_537, 1021] {
            #expect(try client.deletePrefix().status == 200)
            let body = size == 0 ? document : Self.chunked(document, size: size)
            let headers = size == 0 ? [] : [("Transfer-Encoding", "chunked")]
            Self.expectRestored(try Self.restore(client, body, headers: headers), 2)
            let got = try client.get("long/text")
            #expect(got.body.count == expected.count && S.same(got.body, expected), "chunk size \(size)")
            #expect(got.header("Content-Type") == "text/plain")
            #expect(try client.get("long/next").text == "n")
        }
    }

    @Test func aLongLineMustEndWithItsValue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let big = Data(Bytes.random(count: 4 << 20, seed: 4)).base64EncodedString()
        let cases: [(String, String)] = [
            (#"{"base64":"\#(big)","key":"l/x"}"#, "the value member must come last"),
            (#"{"key":"l/x","json":[\#(String(repeating: "1,", count: 3 << 20))1]}"#, "must end with its value"),
            (#"{"key":"l/x","base64":"\#(big)"} trailing"#, "follows the object"),
            (#"{"key":"l/x","base64":"\#(big)!"}"#, "base64"),
            (#"{"key":"l/x","base64":"\#(big)"#, "ends inside"),
        ]
        for (document, why) in cases {
            let response = try Self.restore(client, Self.line(#""key":"l/ok","text":"ok""#) + Array(document.utf8))
            S.expectError(response, status: 400, code: "invalid_snapshot")
            let message = response.json?["message"] as? String ?? ""
            #expect(message.hasPrefix("line 2: ") && message.contains(why), "\(message)")
            #expect(try client.get("l/x").status == 404, "no torn value: \(why)")
            #expect(try client.get("l/ok").status == 404, "all or nothing: \(why)")
            // Nothing half-written is left in the data directory.
            #expect(!S.regularFiles(under: server.dataDirectory + "/values").contains { $0.contains("\\t") }, "temp files left: \(why)")
        }
        // A long line over the size limit: 413 while streaming.
        let small = try TestServer { $0.http.maxBodyBytes = 3 << 20 }
        defer { small.stop() }
        let response = try Self.restore(small.client(), Array(#"{"key":"l/x","base64":"\#(big)"}"#.utf8))
        S.expectError(response, status: 413, code: "payload_too_large")
    }

    // MARK: - Memory

    /// A 200 MiB store (three 60 MiB binary values and 2,000 10 KiB ones,
    /// incompressible, so the files are as large) snapshotted through a slow
    /// reader: the server's RSS grows by less than 64 MiB. (Of the growth,
    /// up to `--cache-mb`, 32 MiB, is the read cache taking small values.)
    @Test func snapshotOfA200MiBStoreStaysInBoundedMemory() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        let connection = try HTTPClientConnection(port: child.port, timeout: 120)
        var expectedBytes = 0
        for i in 0..<3 {
            let value = Bytes.random(count: 60 << 20, seed: UInt64(100 + i))
            let put = try connection.request("PUT", "/store/big/\(i)", body: value)
            #expect(put.status == 201)
            expectedBytes += Self.base64Count(value.count)
        }
        // Pipelined, so 2,000 PUTs take one round trip's worth of waiting.
        let small = Bytes.random(count: 10 << 10, seed: 7)
        var batch: [UInt8] = []
        for i in 0..<2000 {
            batch += Array("PUT /store/small/\(String(format: "%04d", i)) HTTP/1.1\r\nHost: x\r\nContent-Length: \(small.count)\r\n\r\n".utf8) + small
            if i % 100 == 99 {
                try connection.send(batch)
                batch = []
                for _ in 0..<100 { #expect(try connection.readResponse().status == 201) }
            }
        }
        let baseline = try #require(child.rssKiB())

        // A reader with a small receive buffer that takes 60 MB/s at most,
        // slower than the (debug) server makes the document: the server must
        // wait for the socket rather than read ahead.
        let reader = try HTTPClientConnection(port: child.port, timeout: 120, receiveBuffer: 64 * 1024)
        try reader.send("GET /snapshot HTTP/1.1\r\nHost: x\r\n\r\n")
        var received = 0
        var newlines = 0
        var peak = baseline
        var pieces = 0
        let start = Date()
        let response = try reader.readStreamingResponse { piece in
            received += piece.count
            var at = piece.baseAddress!
            let end = at + piece.count
            while at < end, let found = memchr(at, 0x0A, end - at) {
                newlines += 1
                at = UnsafeRawPointer(found) + 1
            }
            pieces += 1
            if pieces % 16 == 0 {
                peak = max(peak, child.rssKiB() ?? 0)
                let ahead = Double(received) / 60e6 - Date().timeIntervalSince(start)
                if ahead > 0 { usleep(UInt32(ahead * 1e6)) }
            }
        }
        let seconds = Date().timeIntervalSince(start)
        #expect(response.status == 200)
        #expect(newlines == 2003)
        #expect(received > expectedBytes + 2000 * Self.base64Count(small.count))
        let growth = peak - baseline
        print("snapshot of a 200 MiB store: \(received) bytes in \(String(format: "%.1f", seconds)) s; server RSS \(baseline) KiB before, peak \(peak) KiB during (+\(growth) KiB)")
        #expect(growth < 64 * 1024, "RSS grew by \(growth) KiB")
    }
}
