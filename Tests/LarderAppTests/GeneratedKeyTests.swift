import Foundation
import LarderModel
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Values": `POST /store/<prefix>/` (and `POST /store/`) stores the
/// body under a generated unique key: 201, `Location`, `{"key": ...}`.
@Suite(.blockingLane) struct GeneratedKeyTests {
    /// Checks a create answer under `prefix` and returns the key.
    static func createdKey(_ response: ClientResponse, prefix: String,
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        guard response.status == 201 else {
            throw StoreTestFailure("POST under '\(prefix)': \(response.status) \(response.text)")
        }
        guard let key = response.json?["key"] as? String else {
            throw StoreTestFailure("no key in \(response.text)")
        }
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
        #expect(key.hasPrefix(prefix), "\(key) is under \(prefix)", sourceLocation: sourceLocation)
        let id = key.dropFirst(prefix.count)
        #expect(!id.isEmpty && !id.contains("/"), "one new segment: \(key)", sourceLocation: sourceLocation)
        #expect(response.header("Location") == "/store/" + key, sourceLocation: sourceLocation)
        #expect(response.header("ETag") != nil, sourceLocation: sourceLocation)
        return key
    }

    @Test func postToPrefixCreatesAValueAtLocation() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let body = Array("name,size\nfirst,1\n".utf8)
        let post = try client.send("POST", "/store/jobs/", headers: [("Content-Type", "text/csv")], body: body)
        let key = try Self.createdKey(post, prefix: "jobs/")
        let id = key.dropFirst("jobs/".count)
        #expect(id.count == 16 && id.allSatisfy(\.isHexDigit), "16 hex digits: \(id)")
        // GET at Location: the body with its content type and the same ETag.
        let location = try #require(post.header("Location"))
        let get = try client.send("GET", location)
        #expect(get.status == 200)
        #expect(get.body == body)
        #expect(get.header("Content-Type") == "text/csv")
        #expect(get.header("ETag") == post.header("ETag"))
        // No Content-Type: the default, as for PUT.
        let raw = try Self.createdKey(try client.send("POST", "/store/jobs/", body: [0, 1, 2]), prefix: "jobs/")
        let rawGet = try client.get(raw)
        #expect(rawGet.body == [0, 1, 2])
        #expect(rawGet.header("Content-Type") == "application/octet-stream")
        // An empty body is a value too.
        let empty = try Self.createdKey(try client.send("POST", "/store/jobs/", body: []), prefix: "jobs/")
        #expect(try client.get(empty).body.isEmpty)
        // Each POST makes a new key; the keys are listed under the prefix.
        #expect(Set([key, raw, empty]).count == 3)
        #expect(Set(try S.listAll(client, prefix: "jobs/").keys) == Set([key, raw, empty]))
        // Generated values are ordinary values: replace and delete them by key.
        #expect(try client.put(key, "changed").status == 204)
        #expect(try client.send("DELETE", location).status == 204)
        #expect(try client.get(key).status == 404)
    }

    @Test func postToRootAndNestedPrefixes() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let root = try client.send("POST", "/store/", headers: [("Content-Type", "application/json")], body: Array("{\"at\":\"root\"}".utf8))
        let rootKey = try Self.createdKey(root, prefix: "")
        #expect(!rootKey.contains("/"))
        let get = try client.send("GET", try #require(root.header("Location")))
        #expect(get.text == "{\"at\":\"root\"}")
        #expect(get.header("Content-Type") == "application/json")
        let nested = try client.send("POST", "/store/a/b/c/", body: Array("deep".utf8))
        let nestedKey = try Self.createdKey(nested, prefix: "a/b/c/")
        #expect(try client.get(nestedKey).text == "deep")
        // A gzip body is checked and stored like a PUT's.
        let gz = S.gzip(Array("compressed body".utf8))
        let gzPost = try client.send("POST", "/store/gz/", headers: [("Content-Encoding", "gzip")], body: gz)
        let gzKey = try Self.createdKey(gzPost, prefix: "gz/")
        #expect(try client.get(gzKey).text == "compressed body")
        S.expectError(try client.send("POST", "/store/gz/", headers: [("Content-Encoding", "gzip")], body: Array("not gzip".utf8)),
                      status: 400, code: "invalid_gzip")
        // An invalid prefix is an invalid key.
        S.expectError(try client.send("POST", "/store/a//", body: Array("x".utf8)), status: 400, code: "invalid_key")
        S.expectError(try client.send("POST", "/store/../", body: Array("x".utf8)), status: 400, code: "invalid_key")
        let keys = Set(try S.listAll(client).keys)
        #expect(keys == Set([rootKey, nestedKey, gzKey]))
    }

    /// 10,000 POSTs from 8 threads: all keys distinct, all listed, and each
    /// thread's keys list in the order it created them.
    @Test func tenThousandConcurrentPostsGiveDistinctOrderedKeys() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        let threads = 8, perThread = 1250
        let made = KeysByThread(threads)
        let errors = S.onThreads(threads) { t in
            let client = WireClient(port: port)
            for i in 0..<perThread {
                let r = try client.send("POST", "/store/jobs/", headers: [("Content-Type", "text/plain")], body: Array("\(t)/\(i)".utf8))
                guard r.status == 201, let key = r.json?["key"] as? String, r.header("Location") == "/store/" + key else {
                    throw StoreTestFailure("POST \(t)/\(i): \(r.status) \(r.text)")
                }
                made.add(t, key)
            }
        }
        #expect(errors.isEmpty, "\(errors.prefix(5))")
        let all = made.all
        let everyKey = all.flatMap { $0 }
        #expect(everyKey.count == threads * perThread)
        #expect(Set(everyKey).count == threads * perThread, "generated keys repeat")
        let client = server.client()
        let listing = try S.listAll(client, prefix: "jobs/")
        #expect(listing.pages >= 10, "paged with the default limit of 1000")
        #expect(listing.keys.count == threads * perThread)
        #expect(Set(listing.keys) == Set(everyKey))
        // Per thread, listing (byte) order is creation order.
        let position = Dictionary(uniqueKeysWithValues: listing.keys.enumerated().map { ($1, $0) })
        for t in 0..<threads {
            let inListing = all[t].sorted { position[$0] ?? -1 < position[$1] ?? -1 }
            #expect(inListing == all[t], "thread \(t): listing order differs from creation order")
        }
        // Spot checks: a value is the one its creator posted.
        for t in 0..<threads {
            let i = (t * 157) % perThread
            #expect(try client.get(all[t][i]).text == "\(t)/\(i)")
        }
    }

    final class KeysByThread: @unchecked Sendable {
        private let lock = NSLock()
        private var keys: [[String]]
        init(_ threads: Int) { keys = Array(repeating: [], count: threads) }
        func add(_ thread: Int, _ key: String) { lock.lock(); keys[thread].append(key); lock.unlock() }
        var all: [[String]] { lock.lock(); defer { lock.unlock() }; return keys }
    }

    @Test func ttlOnPostSetsExpiry() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let before = Date()
        let post = try client.send("POST", "/store/tmp/?ttl=60", body: Array("soon gone".utf8))
        let key = try Self.createdKey(post, prefix: "tmp/")
        let expires = try #require(StoreValuesTests.httpDate(post.header("Larder-Expires")),
                                   "Larder-Expires: \(post.header("Larder-Expires") ?? "missing")")
        #expect(expires >= before.addingTimeInterval(58) && expires <= Date().addingTimeInterval(62), "\(expires)")
        let get = try client.get(key)
        #expect(get.header("Larder-Expires") == post.header("Larder-Expires"))
        let entry = try ModelJSON.decode(ListingPage.self, from: Data(try client.list("tmp/").body)).keys.first
        #expect(entry?.expires != nil, "listing shows the expiry: \(String(describing: entry))")
        // Without ttl: no expiry.
        let lasting = try Self.createdKey(try client.send("POST", "/store/tmp/", body: Array("stays".utf8)), prefix: "tmp/")
        #expect(try client.get(lasting).header("Larder-Expires") == nil)
        // A short ttl really expires.
        let short = try Self.createdKey(try client.send("POST", "/store/tmp/?ttl=1", body: Array("x".utf8)), prefix: "tmp/")
        #expect(try client.get(short).status == 200)
        Thread.sleep(forTimeInterval: 1.3)
        #expect(try client.get(short).status == 404)
        #expect(try S.listAll(client, prefix: "tmp/").keys.sorted() == [key, lasting].sorted())
        // A bad ttl is refused before anything is created.
        S.expectError(try client.send("POST", "/store/tmp/?ttl=0", body: Array("x".utf8)), status: 400, code: "invalid_argument")
        S.expectError(try client.send("POST", "/store/tmp/?ttl=soon", body: Array("x".utf8)), status: 400, code: "invalid_argument")
        #expect(try S.listAll(client, prefix: "tmp/").keys.count == 2)
    }
}
