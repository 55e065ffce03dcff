import Foundation
import LarderTestSupport
import LarderWire
import LarderDiskStore
import LarderStorage
import LarderValueFile
import Testing
import LarderStoreVocabulary

private typealias S = StoreTestSupport

/// docs/http-api.md "Listing".
@Suite(.blockingLane) struct StoreListingTests {
    /// 2,500 keys over several levels; numbers unpadded so byte order is not numeric order.
    static let manyKeys: [String] = {
        var keys: [String] = []
        for i in 0..<1400 { keys.append("users/\(i)") }
        for i in 0..<300 { keys.append("users/archive/\(i)") }
        for i in 0..<400 { keys.append("logs/2026/\(i % 12)/\(i)") }
        for i in 0..<397 { keys.append("z\(i)") }
        keys += ["users", "users2/x", "users!"]
        return keys
    }()

    /// Writes keys on 4 connections at once (value = the key).
    static func fill(_ server: TestServer, _ keys: [String]) throws {
        let port = server.port
        let errors = S.onThreads(4) { t in
            let client = WireClient(port: port)
            for (i, key) in keys.enumerated() where i % 4 == t {
                let r = try S.put(client, key: key, Array(key.utf8), contentType: i % 2 == 0 ? "text/plain" : "application/json")
                if r.status != 201 { throw StoreTestFailure("PUT \(key): \(r.status) \(r.text)") }
            }
        }
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func pagingThroughTwoAndAHalfThousandKeys() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(Self.manyKeys.count == 2500)
        try Self.fill(server, Self.manyKeys)
        let expected = S.byteSorted(Self.manyKeys)

        for limit in [37, 1000, 2499, 2500, 10_000] {
            let all = try S.listAll(client, limit: limit)
            #expect(all.keys.count == 2500, "limit \(limit)")
            #expect(Set(all.keys).count == 2500, "limit \(limit): duplicates")
            S.expectKeys(all.keys, expected, "limit \(limit):")
            #expect(all.pages == (2500 + limit - 1) / limit, "limit \(limit): \(all.pages) pages")
            #expect(all.prefixes.isEmpty)
        }
        // Default limit: 1000, and `next` is the last key of the page.
        let first = try client.list()
        let firstKeys = first.json?["keys"] as? [[String: Any]] ?? []
        #expect(firstKeys.count == 1000)
        #expect(first.json?["next"] as? String == firstKeys.last?["key"] as? String)
        #expect(first.json?["prefix"] as? String == "")
        // Above the maximum is clamped, not refused.
        let big = try client.list(query: "limit=20000")
        #expect(big.status == 200)
        #expect((big.json?["keys"] as? [Any])?.count == 2500)
        #expect(big.json?["next"] is NSNull)
        // `after` need not be a key; past the end gives an empty last page.
        let mid = try client.list("users/", query: "limit=3&after=users/5x")
        #expect((mid.json?["keys"] as? [[String: Any]])?.map { $0["key"] as? String } == ["users/6", "users/60", "users/600"])
        let end = try client.list(query: "after=zzz")
        #expect((end.json?["keys"] as? [Any])?.isEmpty == true)
        #expect(end.json?["next"] is NSNull)
        // `GET /store` without the slash is the root listing too.
        let bare = try client.send("GET", "/store?limit=5")
        #expect(bare.status == 200)
        #expect((bare.json?["keys"] as? [[String: Any]])?.map { $0["key"] as? String } == Array(S.byteSorted(Self.manyKeys).prefix(5)))

        // Prefix listing.
        let users = try S.listAll(client, prefix: "users/", limit: 500)
        let wantUsers = Self.manyKeys.filter { $0.hasPrefix("users/") }
        S.expectKeys(users.keys, S.byteSorted(wantUsers))
        #expect(users.keys.count == 1700)
        let logs = try S.listAll(client, prefix: "logs/2026/3/")
        S.expectKeys(logs.keys, S.byteSorted(Self.manyKeys.filter { $0.hasPrefix("logs/2026/3/") }))
        #expect(try S.listAll(client, prefix: "nothing/here/").keys.isEmpty)

        // One level with delimiter=/.
        let root = try S.listAll(client, delimiter: true)
        S.expectKeys(root.keys, S.byteSorted(["users", "users!"] + Self.manyKeys.filter { $0.hasPrefix("z") }))
        #expect(root.prefixes == ["logs/", "users/", "users2/"])
        let underUsers = try S.listAll(client, prefix: "users/", limit: 100, delimiter: true)
        #expect(underUsers.keys.count == 1400)
        #expect(underUsers.prefixes == ["users/archive/"])
        let logLevel = try S.listAll(client, prefix: "logs/2026/", limit: 5, delimiter: true)
        #expect(logLevel.keys.isEmpty)
        #expect(logLevel.prefixes == S.byteSorted((0..<12).map { "logs/2026/\($0)/" }))
    }

    @Test(.diskStoreOnly("reads the value file's size")) func entriesCarryMetadata() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Array(String(repeating: "metadata ", count: 1000).utf8)
        let put = try client.put("meta/one", value, contentType: "application/json")
        #expect(try client.put("meta/two", []).status == 201)
        let response = try client.list("meta/")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
        let object = S.json(response)
        #expect(object["prefix"] as? String == "meta/")
        #expect(object["prefixes"] as? [String] == [])
        #expect(object["next"] is NSNull)
        let keys = object["keys"] as? [[String: Any]] ?? []
        #expect(keys.count == 2)
        let entry = try #require(keys.first)
        #expect(Set(entry.keys) == ["key", "size", "storedSize", "contentType", "etag", "modified", "expires"])
        #expect(entry["key"] as? String == "meta/one")
        #expect(entry["size"] as? Int == value.count)
        let fileSize = (try FileManager.default.attributesOfItem(atPath: server.dataDirectory + "/values/meta\\/one")[.size] as? Int)
        #expect(entry["storedSize"] as? Int == fileSize)
        #expect((entry["storedSize"] as? Int ?? .max) < value.count)
        #expect(entry["contentType"] as? String == "application/json")
        #expect(entry["etag"] as? String == put.header("ETag"))
        #expect(entry["expires"] is NSNull)
        let modified = try #require(entry["modified"] as? String)
        #expect(modified.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"#, options: .regularExpression) != nil, "\(modified)")
        let parsed = try #require(ISO8601DateFormatter().date(from: modified))
        #expect(abs(parsed.timeIntervalSinceNow) < 60)
        let second = keys[1]
        #expect(second["size"] as? Int == 0)
        #expect(second["contentType"] as? String == "application/octet-stream")
        // A replace shows up in the listing.
        let replaced = try client.put("meta/one", "x", contentType: "text/plain")
        let again = (try client.list("meta/").json?["keys"] as? [[String: Any]])?.first
        #expect(again?["etag"] as? String == replaced.header("ETag"))
        #expect(again?["size"] as? Int == 1)
        #expect(again?["contentType"] as? String == "text/plain")
    }

    @Test func byteOrderAcrossFilesAndDirectories() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // Characters below and above '/' (0x2F) next to directory names.
        let keys = ["a", "a!", "a-", "a.b", "a/b", "a/b!", "a/b/c", "a/b/c/d", "a/b0", "a0", "ab", "A", "a~", "a/!",
                    "b/a/a", "b/a!", "b/a", "b0", "aéx", "é/x", "~"]
        for key in keys { #expect(try S.put(client, key: key, Array(key.utf8)).status == 201, "PUT \(key)") }
        let expected = S.byteSorted(keys)
        for limit in [1, 2, 3, 1000] {
            let all = try S.listAll(client, limit: limit)
            S.expectKeys(all.keys, expected, "limit \(limit):")
        }
        let grouped = try S.listAll(client, delimiter: true)
        let groupedPaged = try S.listAll(client, limit: 1, delimiter: true)
        #expect(grouped.prefixes == ["a/", "b/", "é/"])
        S.expectKeys(grouped.keys, S.byteSorted(keys.filter { !$0.contains("/") }))
        #expect(groupedPaged.keys == grouped.keys && groupedPaged.prefixes == grouped.prefixes)
        // Each listed value reads back as its own key.
        for key in keys { #expect(try S.get(client, key: key).text == key) }
    }

    @Test func prefixDisappearsWhenItsKeysAreDeleted() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        for key in ["p/a/1", "p/a/deep/2", "p/b/1", "p/c", "q"] { #expect(try client.put(key, key).status == 201) }
        func level() throws -> (keys: [String], prefixes: [String]) {
            let r = try S.listAll(client, prefix: "p/", delimiter: true)
            return (r.keys, r.prefixes)
        }
        #expect(try level().prefixes == ["p/a/", "p/b/"])
        #expect(try level().keys == ["p/c"])
        #expect(try client.delete("p/a/1").status == 204)
        #expect(try level().prefixes == ["p/a/", "p/b/"])
        #expect(try client.delete("p/a/deep/2").status == 204)
        #expect(try level().prefixes == ["p/b/"])
        #expect(try client.deletePrefix("p/b/").json?["deleted"] as? Int == 1)
        #expect(try level().prefixes == [])
        #expect(try level().keys == ["p/c"])
        #expect(try client.delete("p/c").status == 204)
        let root = try S.listAll(client, delimiter: true)
        #expect(root.prefixes == [])
        #expect(root.keys == ["q"])
    }

    @Test(arguments: ["limit=0", "limit=-1", "limit=abc", "limit=1.5", "limit=", "limit=10%", "limit=%zz", "delimiter=x", "delimiter=%2C"])
    func badQueryIsRejected(query: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("k", "v").status == 201)
        let response = try client.list(query: query)
        #expect(response.status == 400, "?\(query) answered \(response.status)")
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(response.json?["error"] is String)
    }

    /// 10,001 keys, written with the store library before the server starts:
    /// a limit above 10,000 gives a page of exactly 10,000.
    @Test func limitIsClampedToTenThousand() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var keys: [String] = []
        do {
            let store = try DiskStore(options: DiskStoreOptions(dataDirectory: dir, fsync: false))
            for i in 0..<10_001 {
                let key = "k/\(i / 100)/\(i)"
                keys.append(key)
                let upload = try store.beginUpload(key: try StoreKey(key), contentType: "text/plain", encoding: .identity)
                try [UInt8(i & 0x7F)].withUnsafeBytes { try upload.write($0) }
                _ = try upload.finish().get()
            }
            store.drainBackgroundWork()
        }
        let server = try TestServer(dataDirectory: dir)
        defer { server.stop() }
        let client = server.client()
        let sorted = S.byteSorted(keys)
        for query in ["limit=99999"] {
            let page = try client.list(query: query)
            #expect(page.status == 200, "?\(query)")
            let listed = page.json?["keys"] as? [[String: Any]] ?? []
            #expect(listed.count == 10_000, "?\(query)")
            #expect(page.json?["next"] as? String == sorted[9_999], "?\(query)")
            let rest = try client.list(query: query + "&after=" + S.encodeQuery(sorted[9_999]))
            #expect((rest.json?["keys"] as? [[String: Any]])?.map { $0["key"] as? String } == [sorted[10_000]])
            #expect(rest.json?["next"] is NSNull)
        }
    }
}
