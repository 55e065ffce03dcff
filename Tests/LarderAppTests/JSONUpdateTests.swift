import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Values": `POST /store/<key>` atomic JSON append and `PATCH`
/// JSON merge patch (RFC 7396), through the server.
@Suite(.blockingLane) struct JSONUpdateTests {
    // MARK: - Helpers

    static func parse(_ bytes: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    }

    /// JSON equality of two parsed documents: objects by members, arrays in
    /// order, numbers by value (1 == 1.0), booleans distinct from numbers.
    static func same(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case (is NSNull, is NSNull):
            return true
        case (let x as String, let y as String):
            return x == y
        case (let x as [String: Any], let y as [String: Any]):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        case (let x as [Any], let y as [Any]):
            return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (let x as NSNumber, let y as NSNumber):
            let xBool = String(cString: x.objCType) == "c", yBool = String(cString: y.objCType) == "c"
            return xBool == yBool && (xBool ? x.boolValue == y.boolValue : x.doubleValue == y.doubleValue)
        default:
            return false
        }
    }

    /// The body is the JSON document `expected`.
    static func expectJSON(_ body: [UInt8], _ expected: String, _ note: String = "",
                           sourceLocation: SourceLocation = #_sourceLocation) {
        guard let want = parse(Array(expected.utf8)) else {
            Issue.record("bad expected JSON \(expected)", sourceLocation: sourceLocation)
            return
        }
        guard let got = parse(body) else {
            Issue.record("\(note) not JSON: \(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
            return
        }
        #expect(same(got, want), "\(note) got \(String(decoding: body, as: UTF8.self)), want \(expected)",
                sourceLocation: sourceLocation)
    }

    static func append(_ client: WireClient, _ key: String, _ body: String, query: String = "",
                       headers: [(String, String)] = []) throws -> ClientResponse {
        try client.send("POST", "/store/" + S.encode(key) + (query.isEmpty ? "" : "?" + query),
                        headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }

    static func patch(_ client: WireClient, _ key: String, _ body: String,
                      contentType: String? = "application/merge-patch+json",
                      headers: [(String, String)] = []) throws -> ClientResponse {
        try client.send("PATCH", "/store/" + S.encode(key),
                        headers: (contentType.map { [("Content-Type", $0)] } ?? []) + headers, body: Array(body.utf8))
    }

    /// A 200 append answer: `{"count": n}`, an ETag that a GET then shows.
    static func expectAppended(_ client: WireClient, _ response: ClientResponse, key: String, count: Int, stored: String,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == 200, "append: \(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
        #expect(response.json?["count"] as? Int == count, "answer \(response.text), want count \(count)", sourceLocation: sourceLocation)
        #expect(response.json?.count == 1, "answer \(response.text)", sourceLocation: sourceLocation)
        let tag = response.header("ETag")
        #expect(tag != nil, sourceLocation: sourceLocation)
        let get = try client.get(key)
        #expect(get.status == 200, sourceLocation: sourceLocation)
        #expect(get.header("ETag") == tag, "GET shows the tag the append answered", sourceLocation: sourceLocation)
        expectJSON(get.body, stored, "GET after append:", sourceLocation: sourceLocation)
    }

    // MARK: - Append

    @Test func appendToAbsentKeyMakesAList() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        try Self.expectAppended(client, try Self.append(client, "a", "{\"x\":1}"), key: "a", count: 1, stored: "[{\"x\":1}]")
        #expect(try client.get("a").header("Content-Type") == "application/json")
        try Self.expectAppended(client, try Self.append(client, "s", "\"text\""), key: "s", count: 1, stored: "[\"text\"]")
        try Self.expectAppended(client, try Self.append(client, "n", "null"), key: "n", count: 1, stored: "[null]")
        // An array body appends each element, to an empty list here.
        try Self.expectAppended(client, try Self.append(client, "l", "[1,2]"), key: "l", count: 2, stored: "[1,2]")
        // The created value is listed like any other.
        #expect(Set(try S.listAll(client).keys) == ["a", "l", "n", "s"])
    }

    @Test func appendToAnArray() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("list", "[1,2]", contentType: "application/json").status == 201)
        // A scalar body is one more element.
        try Self.expectAppended(client, try Self.append(client, "list", "3"), key: "list", count: 3, stored: "[1,2,3]")
        // An array body appends each element, in order.
        try Self.expectAppended(client, try Self.append(client, "list", "[4,\"five\",{\"six\":6}]"), key: "list", count: 6,
                                stored: "[1,2,3,4,\"five\",{\"six\":6}]")
        // An array inside the body array is one element.
        try Self.expectAppended(client, try Self.append(client, "list", "[[7,8]]"), key: "list", count: 7,
                                stored: "[1,2,3,4,\"five\",{\"six\":6},[7,8]]")
        // An empty array body appends nothing but still answers.
        try Self.expectAppended(client, try Self.append(client, "list", "[]"), key: "list", count: 7,
                                stored: "[1,2,3,4,\"five\",{\"six\":6},[7,8]]")
        // Objects and literals.
        try Self.expectAppended(client, try Self.append(client, "list", "{\"k\":[true,false,null]}"), key: "list", count: 8,
                                stored: "[1,2,3,4,\"five\",{\"six\":6},[7,8],{\"k\":[true,false,null]}]")
        // Stored as exact JSON text that any parser reads back.
        let text = try client.get("list").text
        #expect(Self.parse(Array(text.utf8)) is [Any], "\(text)")
    }

    @Test func appendToAScalarMakesAPair() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("s", "\"x\"", contentType: "application/json").status == 201)
        try Self.expectAppended(client, try Self.append(client, "s", "7"), key: "s", count: 2, stored: "[\"x\",7]")
        #expect(try client.put("o", "{\"a\":1}", contentType: "application/json").status == 201)
        try Self.expectAppended(client, try Self.append(client, "o", "{\"b\":2}"), key: "o", count: 2, stored: "[{\"a\":1},{\"b\":2}]")
        #expect(try client.put("z", "null", contentType: "application/json").status == 201)
        try Self.expectAppended(client, try Self.append(client, "z", "0"), key: "z", count: 2, stored: "[null,0]")
        #expect(try client.put("n", "12.5", contentType: "application/json").status == 201)
        try Self.expectAppended(client, try Self.append(client, "n", "true"), key: "n", count: 2, stored: "[12.5,true]")
    }

    @Test func appendUniqueSkipsPresentElements() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("u", "[1,\"a\",{\"x\":1,\"y\":[2]}]", contentType: "application/json").status == 201)
        // 1.0 equals 1, an object with its members reordered equals the stored
        // one; "b" and 2 appear twice in the body and are added once.
        let body = "[1.0, \"b\", {\"y\":[2],\"x\":1}, \"b\", 2, 2.0, 1e0, \"a\"]"
        try Self.expectAppended(client, try Self.append(client, "u", body, query: "unique=1"), key: "u", count: 5,
                                stored: "[1,\"a\",{\"x\":1,\"y\":[2]},\"b\",2]")
        // A scalar already present: nothing changes but the answer still counts.
        try Self.expectAppended(client, try Self.append(client, "u", "\"b\"", query: "unique=1"), key: "u", count: 5,
                                stored: "[1,\"a\",{\"x\":1,\"y\":[2]},\"b\",2]")
        // true is not 1, "1" is not 1, [2] is not 2.
        try Self.expectAppended(client, try Self.append(client, "u", "[true, \"1\", [2]]", query: "unique=1"), key: "u", count: 8,
                                stored: "[1,\"a\",{\"x\":1,\"y\":[2]},\"b\",2,true,\"1\",[2]]")
        // Without unique, duplicates are appended.
        try Self.expectAppended(client, try Self.append(client, "u", "[1, 1]"), key: "u", count: 10,
                                stored: "[1,\"a\",{\"x\":1,\"y\":[2]},\"b\",2,true,\"1\",[2],1,1]")
        // unique=1 on an absent key drops duplicates within the body.
        try Self.expectAppended(client, try Self.append(client, "fresh", "[3, 3.0, 4, 3]", query: "unique=1"), key: "fresh", count: 2,
                                stored: "[3,4]")
        // A scalar stored value joins the comparison.
        #expect(try client.put("sv", "5", contentType: "application/json").status == 201)
        try Self.expectAppended(client, try Self.append(client, "sv", "[5.0, 6]", query: "unique=1"), key: "sv", count: 2,
                                stored: "[5,6]")
    }

    @Test func appendErrorsLeaveTheValueAlone() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // Stored value that is not JSON: 409 not_json.
        let text = try client.put("text", "hello, world", contentType: "text/plain")
        #expect(text.status == 201)
        S.expectError(try Self.append(client, "text", "1"), status: 409, code: "not_json")
        let after = try client.get("text")
        #expect(after.text == "hello, world")
        #expect(after.header("ETag") == text.header("ETag"))
        #expect(try client.put("binary", [0x1F, 0x8B, 0x00, 0xFF]).status == 201)
        S.expectError(try Self.append(client, "binary", "1"), status: 409, code: "not_json")
        #expect(try client.put("emptyvalue", [UInt8]()).status == 201)
        S.expectError(try Self.append(client, "emptyvalue", "1"), status: 409, code: "not_json")
        #expect(try client.get("emptyvalue").body.isEmpty)
        // A body that is not JSON: 400 invalid_json, whatever is stored.
        let list = try client.put("list", "[1]", contentType: "application/json")
        for bad in ["{\"a\":", "", "1 2", "[1,]", "undefined", "{'a':1}", "\"unterminated"] {
            S.expectError(try Self.append(client, "list", bad), status: 400, code: "invalid_json")
        }
        let listAfter = try client.get("list")
        #expect(listAfter.text == "[1]")
        #expect(listAfter.header("ETag") == list.header("ETag"))
        // ...and on an absent key, which stays absent.
        S.expectError(try Self.append(client, "absent", "nope"), status: 400, code: "invalid_json")
        #expect(try client.get("absent").status == 404)
    }

    @Test func appendHonoursIfMatch() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let put = try client.put("l", "[]", contentType: "application/json")
        let tag = try #require(put.header("ETag"))
        S.expectError(try Self.append(client, "l", "1", headers: [("If-Match", "\"stale\"")]), status: 412, code: "precondition_failed")
        #expect(try client.get("l").text == "[]")
        let ok = try Self.append(client, "l", "1", headers: [("If-Match", tag)])
        try Self.expectAppended(client, ok, key: "l", count: 1, stored: "[1]")
        let tag2 = try #require(ok.header("ETag"))
        #expect(tag2 != tag)
        S.expectError(try Self.append(client, "l", "2", headers: [("If-Match", tag)]), status: 412, code: "precondition_failed")
        // If-None-Match: * makes an append create-only.
        S.expectError(try Self.append(client, "l", "2", headers: [("If-None-Match", "*")]), status: 412, code: "precondition_failed")
        try Self.expectAppended(client, try Self.append(client, "new", "2", headers: [("If-None-Match", "*")]), key: "new", count: 1, stored: "[2]")
        #expect(try client.get("l").header("ETag") == tag2)
    }

    /// 4 threads × 50 appends to one list: no append is lost and every one
    /// sees a distinct count.
    @Test func concurrentAppendsLoseNothing() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        let counts = Collected()
        let errors = S.onThreads(4) { t in
            let client = WireClient(port: port)
            for i in 0..<50 {
                let r = try Self.append(client, "shared", "\"t\(t)-\(i)\"")
                guard r.status == 200, let n = r.json?["count"] as? Int else { throw StoreTestFailure("append: \(r.status) \(r.text)") }
                counts.add(n)
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        #expect(counts.sorted == Array(1...200), "every append saw its own count")
        let list = try #require(Self.parse(try server.client().get("shared").body) as? [String])
        #expect(list.count == 200)
        #expect(Set(list).count == 200)
        // Each thread's elements are in the order it sent them.
        for t in 0..<4 {
            #expect(list.filter { $0.hasPrefix("t\(t)-") } == (0..<50).map { "t\(t)-\($0)" })
        }
    }

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [Int] = []
        func add(_ n: Int) { lock.lock(); items.append(n); lock.unlock() }
        var sorted: [Int] { lock.lock(); defer { lock.unlock() }; return items.sorted() }
    }

    // MARK: - Merge patch

    /// RFC 7396 Appendix A: (original, patch, result).
    static let rfc7396Examples: [(String, String, String)] = [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, #"null"#, #"null"#),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"e":null,"a":1}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ]

    @Test func rfc7396AppendixAExamples() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(Self.rfc7396Examples.count == 15)
        for (i, (original, patch, result)) in Self.rfc7396Examples.enumerated() {
            let key = "rfc/\(i + 1)"
            #expect(try client.put(key, original, contentType: "application/json").status == 201)
            // application/merge-patch+json for odd examples, application/json for even ones.
            let type = i % 2 == 0 ? "application/merge-patch+json" : "application/json; charset=utf-8"
            let answer = try Self.patch(client, key, patch, contentType: type)
            #expect(answer.status == 200, "example \(i + 1): \(answer.status) \(answer.text)")
            #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true, "example \(i + 1)")
            Self.expectJSON(answer.body, result, "example \(i + 1) answer:")
            let get = try client.get(key)
            #expect(get.status == 200)
            #expect(get.header("ETag") == answer.header("ETag"), "example \(i + 1)")
            Self.expectJSON(get.body, result, "example \(i + 1) stored:")
        }
    }

    @Test func patchKeepsUntouchedMembersAndNests() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let original = #"{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}"#
        let put = try client.put("doc", original, contentType: "application/json")
        let tag = try #require(put.header("ETag"))
        // The RFC 7396 section 3 example.
        let patch = #"{"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]}"#
        let answer = try Self.patch(client, "doc", patch)
        #expect(answer.status == 200)
        let want = #"{"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"}"#
        Self.expectJSON(answer.body, want)
        Self.expectJSON(try client.get("doc").body, want)
        #expect(answer.header("ETag") != tag)
        // An empty patch changes nothing in the document (but is a write).
        let empty = try Self.patch(client, "doc", "{}")
        #expect(empty.status == 200)
        Self.expectJSON(empty.body, want)
    }

    @Test func patchErrors() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // Absent: 404, still absent.
        S.expectError(try Self.patch(client, "absent", "{\"a\":1}"), status: 404, code: "not_found")
        #expect(try client.get("absent").status == 404)
        // Stored value not JSON: 409.
        let text = try client.put("text", "plain words", contentType: "text/plain")
        S.expectError(try Self.patch(client, "text", "{\"a\":1}"), status: 409, code: "not_json")
        #expect(try client.get("text").text == "plain words")
        #expect(try client.get("text").header("ETag") == text.header("ETag"))
        // Body not JSON: 400.
        let doc = try client.put("doc", "{\"a\":1}", contentType: "application/json")
        for bad in ["{\"a\":", "", "{a:1}", "{\"a\":1}}"] {
            S.expectError(try Self.patch(client, "doc", bad), status: 400, code: "invalid_json")
        }
        // Another content type: 415, whatever the body.
        for type in ["text/plain", "application/octet-stream", "application/json-patch+json", nil] as [String?] {
            S.expectError(try Self.patch(client, "doc", "{\"a\":2}", contentType: type), status: 415, code: "unsupported_media_type")
        }
        let after = try client.get("doc")
        #expect(after.text == "{\"a\":1}")
        #expect(after.header("ETag") == doc.header("ETag"))
    }

    @Test func patchHonoursIfMatch() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let tag = try #require(try client.put("doc", "{\"n\":0}", contentType: "application/json").header("ETag"))
        S.expectError(try Self.patch(client, "doc", "{\"n\":1}", headers: [("If-Match", "\"stale\"")]), status: 412, code: "precondition_failed")
        #expect(try client.get("doc").text == "{\"n\":0}")
        let ok = try Self.patch(client, "doc", "{\"n\":1}", headers: [("If-Match", tag)])
        #expect(ok.status == 200)
        Self.expectJSON(ok.body, "{\"n\":1}")
        S.expectError(try Self.patch(client, "doc", "{\"n\":2}", headers: [("If-Match", tag)]), status: 412, code: "precondition_failed")
        Self.expectJSON(try client.get("doc").body, "{\"n\":1}")
        // The gzip tag of the current version works too.
        let gzTag = try #require(try client.get("doc", headers: [("Accept-Encoding", "gzip")]).header("ETag"))
        #expect(try Self.patch(client, "doc", "{\"n\":3}", headers: [("If-Match", gzTag)]).status == 200)
        Self.expectJSON(try client.get("doc").body, "{\"n\":3}")
    }

    /// 4 clients patch different fields of one document 50 times each: no
    /// patch is lost, so every field ends at its last value.
    @Test func concurrentPatchesOfDifferentFieldsLoseNothing() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        #expect(try server.client().put("doc", "{\"keep\":true}", contentType: "application/json").status == 201)
        let errors = S.onThreads(4) { t in
            let client = WireClient(port: port)
            for i in 0..<50 {
                let r = try Self.patch(client, "doc", "{\"field\(t)\": \(i)}")
                guard r.status == 200, let doc = r.json else { throw StoreTestFailure("patch: \(r.status) \(r.text)") }
                // The answer is the document right after this patch.
                guard doc["field\(t)"] as? Int == i, doc["keep"] as? Bool == true else {
                    throw StoreTestFailure("patch \(t)/\(i) answered \(r.text)")
                }
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        Self.expectJSON(try server.client().get("doc").body,
                        "{\"keep\":true,\"field0\":49,\"field1\":49,\"field2\":49,\"field3\":49}")
    }
}
