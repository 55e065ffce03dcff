import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// `GET /journal?format=har`: the journal's entries as an HTTP Archive 1.2
/// document, checked against the specification's required fields and read
/// by a HAR library from PyPI (haralyzer); the token and `Authorization`
/// never appear in it.
@Suite(.blockingLane) struct JournalHARTests {
    static let token = "har-Secret_token.42"
    static let bearer = [("Authorization", "Bearer \(token)")]

    /// The fields HAR 1.2 requires of each object (those not marked
    /// optional in the specification).
    static let required: [String: Set<String>] = [
        "log": ["version", "creator", "entries"],
        "creator": ["name", "version"],
        "entry": ["startedDateTime", "time", "request", "response", "cache", "timings"],
        "request": ["method", "url", "httpVersion", "cookies", "headers", "queryString", "headersSize", "bodySize"],
        "response": ["status", "statusText", "httpVersion", "cookies", "headers", "content", "redirectURL",
                     "headersSize", "bodySize"],
        "content": ["size", "mimeType"],
        "timings": ["send", "wait", "receive"],
        "pair": ["name", "value"],
    ]

    static func expectFields(_ object: [String: Any]?, _ kind: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let object else {
            Issue.record("no \(kind) object", sourceLocation: sourceLocation)
            return
        }
        let missing = Self.required[kind]!.subtracting(object.keys)
        #expect(missing.isEmpty, "\(kind) lacks \(missing.sorted())", sourceLocation: sourceLocation)
    }

    static func server() throws -> TestServer {
        try TestServer { $0.token = token }
    }

    /// Three requests with the token (a PUT, a GET with the token in the
    /// query too, a 404), then the HAR's body.
    static func recordSome(_ server: TestServer) throws -> [UInt8] {
        let client = server.client()
        #expect(try client.send("PUT", "/store/users/7", headers: bearer + [("Content-Type", "application/json")],
                                body: Array(#"{"name":"Ada"}"#.utf8)).status == 201)
        #expect(try client.send("GET", "/store/users/7?x=a%20b&access_token=\(token)", headers: bearer).status == 200)
        #expect(try client.send("GET", "/store/missing", headers: bearer).status == 404)
        let har = try client.send("GET", "/journal?format=har", headers: bearer)
        #expect(har.status == 200 && har.header("Content-Type")?.hasPrefix("application/json") == true)
        return har.body
    }

    @Test func everyEntryHasTheFieldsHAR12RequiresAndNoSecret() throws {
        let server = try Self.server()
        let body = try Self.recordSome(server)
        #expect(!String(decoding: body, as: UTF8.self).contains(Self.token), "the token is in the HAR")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let log = root["log"] as? [String: Any]
        Self.expectFields(log, "log")
        #expect(log?["version"] as? String == "1.2")
        let creator = log?["creator"] as? [String: Any]
        Self.expectFields(creator, "creator")
        #expect(creator?["name"] as? String == "larder")
        let entries = try #require(log?["entries"] as? [[String: Any]])
        #expect(entries.count == 3)
        for entry in entries {
            Self.expectFields(entry, "entry")
            let request = entry["request"] as? [String: Any], response = entry["response"] as? [String: Any]
            Self.expectFields(request, "request")
            Self.expectFields(response, "response")
            Self.expectFields(response?["content"] as? [String: Any], "content")
            Self.expectFields(entry["timings"] as? [String: Any], "timings")
            for pairs in [request?["headers"], request?["queryString"], response?["headers"]] {
                for pair in try #require(pairs as? [[String: Any]]) { Self.expectFields(pair, "pair") }
            }
            let started = try #require(entry["startedDateTime"] as? String)
            #expect(ISO8601DateFormatter().date(from: started.replacingOccurrences(of: #"\.\d+"#, with: "", options: .regularExpression)) != nil,
                    "startedDateTime \(started) is not ISO 8601")
        }
        let put = entries[0]["request"] as? [String: Any]
        #expect(put?["method"] as? String == "PUT")
        // The URL is made of the Host the client sent and the target.
        let putHeaders = (put?["headers"] as? [[String: String]]) ?? []
        let host = try #require(putHeaders.first { $0["name"]?.lowercased() == "host" }?["value"])
        #expect(put?["url"] as? String == "http://\(host)/store/users/7")
        #expect(put?["bodySize"] as? Int == 14 && put?["httpVersion"] as? String == "HTTP/1.1")
        #expect(putHeaders.contains { $0["name"] == "Authorization" && $0["value"] == "REDACTED" })
        #expect(putHeaders.contains { $0["name"] == "Content-Type" && $0["value"] == "application/json" })
        let putResponse = entries[0]["response"] as? [String: Any]
        #expect(putResponse?["status"] as? Int == 201 && putResponse?["statusText"] as? String == "Created")
        #expect(((putResponse?["headers"] as? [[String: String]]) ?? []).contains { $0["name"] == "ETag" })
        // The query: the secret redacted in the URL and in the parameters, the rest decoded.
        let get = entries[1]["request"] as? [String: Any]
        #expect((get?["url"] as? String)?.hasSuffix("/store/users/7?x=a%20b&access_token=REDACTED") == true)
        let query = (get?["queryString"] as? [[String: String]]) ?? []
        #expect(query == [["name": "x", "value": "a b"], ["name": "access_token", "value": "REDACTED"]])
        let getResponse = entries[1]["response"] as? [String: Any]
        #expect((getResponse?["content"] as? [String: Any])?["mimeType"] as? String == "application/json")
        #expect((getResponse?["content"] as? [String: Any])?["size"] as? Int == 14)
        #expect((entries[2]["response"] as? [String: Any])?["status"] as? Int == 404)
    }

    @Test func haralyzerReadsIt() async throws {
        try PythonRunner.require([("haralyzer", "haralyzer")])
        let server = try Self.server()
        let body = try Self.recordSome(server)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString).har")
        try Data(body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let code = """
        import json, sys
        from haralyzer import HarParser
        with open(sys.argv[1]) as f:
            parser = HarParser(json.load(f))
        entries = [e for page in parser.pages for e in page.entries]
        print(json.dumps({
            "version": parser.version, "creator": parser.creator["name"],
            "entries": [[e.request.method, e.request.url, e.response.status, e.request.get_header_value("Authorization"),
                         e.startTime.year > 2000, e.request.host] for e in entries],
        }))
        """
        let result = try await PythonRunner.run(["-", file.path], stdin: code)
        #expect(result.status == 0, "\(result.stderr)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(out["version"] as? String == "1.2" && out["creator"] as? String == "larder")
        let entries = try #require(out["entries"] as? [[Any]])
        let base = "http://\(entries.first?[5] as? String ?? "?")"
        #expect(entries.map { "\($0[0]) \($0[1]) \($0[2])" } == [
            "PUT \(base)/store/users/7 201",
            "GET \(base)/store/users/7?x=a%20b&access_token=REDACTED 200",
            "GET \(base)/store/missing 404",
        ])
        #expect(entries.allSatisfy { $0[3] as? String == "REDACTED" && $0[4] as? Bool == true })
    }

    @Test func theFiltersAndTheLongPollAnswerInTheSameForm() throws {
        let server = try TestServer()
        let client = server.client()
        let waiting = try HTTPClientConnection(port: server.port)
        #expect(try client.put("a", "1").status == 201)
        #expect(try client.get("a").status == 200)
        let filtered = try #require(try client.send("GET", "/journal?format=har&method=GET").json)
        let entries = try #require((filtered["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        #expect(entries.count == 1 && (entries[0]["request"] as? [String: Any])?["method"] as? String == "GET")
        #expect(entries[0]["_seq"] as? Int == 2)
        // A wait past the last entry answers, when the next comes, as a HAR too.
        try waiting.send("GET /journal?format=har&since=2&wait=30 HTTP/1.1\r\nHost: x\r\n\r\n")
        try Poll.until(10, "the journal's waiter") { server.server.journalWaiterCount == 1 }
        let writer = try HTTPClientConnection(port: server.port)
        try writer.send("PUT /store/b HTTP/1.1\r\nHost: example.test:8080\r\nContent-Length: 1\r\n\r\n2")
        #expect(try writer.readResponse().status == 201)
        let answer = try waiting.readResponse()
        let woken = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        let wokenEntries = try #require((woken["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        #expect(wokenEntries.count == 1 && (wokenEntries[0]["request"] as? [String: Any])?["url"] as? String == "http://example.test:8080/store/b")
        // An unknown format is refused, clearly.
        let bad = try client.send("GET", "/journal?format=xml")
        #expect(bad.status == 400 && bad.text.contains("invalid_argument") && bad.text.contains("json or har"))
    }
}
