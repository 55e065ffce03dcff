import Foundation
import LarderTestSupport
import LarderWire
import LarderDiskStore
import LarderStorage
import LarderValueFile
import Testing
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// `--fixtures DIR`: a read-only layer under the store. Reads fall back to
/// it, deletes revert to it, a reset returns to exactly it, listings merge
/// both layers, and the directory itself is never written.
@Suite(.blockingLane) struct FixtureTests {
    /// A fixture directory with a few files of different kinds.
    static func makeFixtures(_ files: [String: [UInt8]]? = nil) throws -> String {
        let dir = TestServer.makeTempDirectory()
        let all = files ?? [
            "users/1.json": Array("{\"name\":\"ada\"}".utf8),
            "users/2.json": Array("{\"name\":\"grace\"}".utf8),
            "list.json": Array("[1,2]".utf8),
            "docs/readme.txt": Array("hello fixtures\n".utf8),
            "img/dot.png": [0x89, 0x50, 0x4E, 0x47, 0x00, 0xFF],
            "docs/.gitkeep": [],
        ]
        for (path, bytes) in all {
            let file = dir + "/" + path
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
        }
        return dir
    }

    static func server(fixtures: String, dataDirectory: String? = nil) throws -> TestServer {
        try TestServer(dataDirectory: dataDirectory) { $0.fixturesDirectory = fixtures }
    }

    /// Paths, sizes, modification times and contents of every entry under `dir`.
    static func fingerprint(_ dir: String) throws -> [String] {
        var lines: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: dir)!
        while let relative = enumerator.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/" + relative)
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            let content = FileManager.default.contents(atPath: dir + "/" + relative).map { Array($0) } ?? []
            lines.append("\(relative) \(attributes[.size] ?? 0) \(modified) \(Bytes.crc32(content))")
        }
        return lines.sorted()
    }

    @Test func readsFallBackToTheFixtureAndSayWhichLayerAnswered() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()

        let user = try client.get("users/1.json")
        #expect(user.status == 200)
        #expect(user.text == "{\"name\":\"ada\"}")
        #expect(user.header("Content-Type") == "application/json")
        #expect(user.header("Larder-Source") == "fixture")
        #expect(try client.get("docs/readme.txt").header("Content-Type") == "text/plain; charset=utf-8")
        let png = try client.get("img/dot.png")
        #expect(png.header("Content-Type") == "image/png")
        #expect(png.body == [0x89, 0x50, 0x4E, 0x47, 0x00, 0xFF])
        #expect(try client.get("docs/.gitkeep").status == 404, "dot files are not fixtures")

        // The fixture is served like any value: ranges, HEAD, 304, and gzip as
        // stored, except that this one is so small its gzip form is larger,
        // so it goes out as identity (with Vary) even when gzip is accepted.
        let gzip = try client.get("docs/readme.txt", headers: [("Accept-Encoding", "gzip")])
        #expect(gzip.header("Content-Encoding") == nil && gzip.header("Vary") == "Accept-Encoding")
        #expect(gzip.body == Array("hello fixtures\n".utf8))
        let range = try client.get("docs/readme.txt", headers: [("Range", "bytes=0-4")])
        #expect(range.status == 206 && range.text == "hello")
        #expect(try client.head("users/1.json").header("Larder-Source") == "fixture")
        let etag = try #require(user.header("ETag"))
        let notModified = try client.get("users/1.json", headers: [("If-None-Match", etag)])
        #expect(notModified.status == 304)
        #expect(notModified.header("Larder-Source") == "fixture")

        // A stored value wins over the fixture, and says so.
        #expect(try client.put("users/1.json", "{\"name\":\"bob\"}", contentType: "application/json").status == 204,
                "a key with a fixture already exists: replacing it is 204")
        let stored = try client.get("users/1.json")
        #expect(stored.text == "{\"name\":\"bob\"}")
        #expect(stored.header("Larder-Source") == "store")
        #expect(stored.header("ETag") != etag)
        #expect(try client.put("fresh", "x").status == 201)
        #expect(try client.get("fresh").header("Larder-Source") == "store")
        #expect(try client.get("nowhere").status == 404)

        // /metrics counts the fixtures apart from the values written. On
        // PostgreSQL the totals are read from the database just after a
        // change is delivered, so they may trail the write's answer by that
        // one query: wait for them.
        var metrics = ""
        let counted = Poll.holds(within: 10) {
            metrics = (try? client.send("GET", "/metrics").text) ?? ""
            return metrics.contains("\nlarder_keys 2\n")
        }
        #expect(counted, "\(metrics)")
        #expect(metrics.contains("\nlarder_fixture_keys 5\n"), "\(metrics)")
    }

    @Test func fixtureETagsNeverEqualStoreETags() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()
        let fixtureTag = try #require(client.get("list.json").header("ETag"))
        // Store versions are wall-clock nanoseconds; fixture versions carry the top bit.
        #expect(fixtureTag.dropFirst().first.map { "89abcdef".contains($0) } == true, "\(fixtureTag)")
        try client.put("list.json", "[9]")
        let storeTag = try #require(client.get("list.json").header("ETag"))
        #expect(storeTag.dropFirst().first.map { "01234567".contains($0) } == true, "\(storeTag)")
    }

    @Test func deleteRevertsToTheFixtureAndPreconditionsSeeIt() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()
        let fixtureTag = try #require(client.get("users/2.json").header("ETag"))

        // If-Match against the fixture's ETag guards a write over it.
        #expect(try client.put("users/2.json", Array("{}".utf8), headers: [("If-Match", "\"0000000000000001\"")]).status == 412)
        #expect(try client.put("users/2.json", Array("{\"v\":2}".utf8), headers: [("If-Match", fixtureTag)]).status == 204)
        #expect(try client.put("users/2.json", Array("{}".utf8), headers: [("If-None-Match", "*")]).status == 412,
                "If-None-Match: * fails: the key exists")
        #expect(try client.get("users/2.json").text == "{\"v\":2}")

        let deleted = try client.delete("users/2.json")
        #expect(deleted.status == 204)
        let reverted = try client.get("users/2.json")
        #expect(reverted.text == "{\"name\":\"grace\"}")
        #expect(reverted.header("Larder-Source") == "fixture")
        #expect(reverted.header("ETag") == fixtureTag, "the fixture is the same representation as before")
        // A fixture cannot be deleted: the key still reads, so the delete answers 204.
        #expect(try client.delete("users/2.json").status == 204)
        #expect(try client.get("users/2.json").status == 200)
        // If-Match on DELETE compares with the fixture when the store has no value.
        #expect(try client.send("DELETE", "/store/users/2.json", headers: [("If-Match", "\"0000000000000001\"")]).status == 412)
        #expect(try client.delete("absent").status == 404)
    }

    @Test func appendAndPatchStartFromTheFixture() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()

        let appended = try client.send("POST", "/store/list.json", headers: [("Content-Type", "application/json")], body: Array("3".utf8))
        #expect(appended.status == 200)
        #expect(S.json(appended)["count"] as? Int == 3)
        #expect(try client.get("list.json").text == "[1,2,3]")
        let patched = try client.send("PATCH", "/store/users/1.json", headers: [("Content-Type", "application/merge-patch+json")],
                                      body: Array("{\"admin\":true}".utf8))
        #expect(patched.status == 200)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(client.get("users/1.json").body)) as? [String: Any])
        #expect(doc["name"] as? String == "ada" && doc["admin"] as? Bool == true)
        #expect(try client.get("users/1.json").header("Larder-Source") == "store")
        // The fixture file itself is untouched.
        #expect(FileManager.default.contents(atPath: fixtures + "/users/1.json") == Data("{\"name\":\"ada\"}".utf8))
    }

    @Test func anExpiredValueRevealsTheFixtureAgain() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()
        let events = try SSEClient(port: server.port, target: "/events?prefix=list.json")
        defer { events.close() }
        #expect(try events.readHead() == 200)
        #expect(try client.send("PUT", "/store/list.json?ttl=1", body: Array("[0]".utf8)).status == 204)
        #expect(try client.get("list.json").text == "[0]")
        #expect(try events.nextEvent()?.event == "put")
        // Reads see the fixture as soon as the value expires; the sweep's
        // removal reaches the feed as the fixture coming back.
        let swept = try #require(try events.nextEvent())
        #expect(swept.event == "put")
        #expect(swept.json?["source"] as? String == "fixture")
        #expect(try client.get("list.json").text == "[1,2]")
        #expect(try client.get("list.json").header("Larder-Source") == "fixture")
    }

    @Test func resetReturnsToExactlyTheFixtures() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()
        let baseline = try S.listAll(client).keys
        for i in 0..<40 { try client.put("scratch/\(i)", "v\(i)") }
        try client.put("users/1.json", "{\"changed\":1}")
        _ = try client.send("POST", "/store/list.json", body: Array("[7,8]".utf8))

        let reset = try client.deletePrefix("")
        #expect(reset.status == 200)
        #expect(S.json(reset)["deleted"] as? Int == 42)
        #expect(try S.listAll(client).keys == baseline)
        #expect(try client.get("users/1.json").text == "{\"name\":\"ada\"}")
        #expect(try client.get("list.json").text == "[1,2]")
        #expect(try client.get("scratch/3").status == 404)

        // A prefix reset reverts only that prefix.
        try client.put("users/1.json", "{\"changed\":2}")
        try client.put("docs/readme.txt", "changed")
        #expect(S.json(try client.deletePrefix("users/"))["deleted"] as? Int == 1)
        #expect(try client.get("users/1.json").header("Larder-Source") == "fixture")
        #expect(try client.get("docs/readme.txt").text == "changed")
    }

    @Test func listingsMergeBothLayersInOrderWithoutDuplicates() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()
        try client.put("users/1.json", "{\"name\":\"stored\"}")  // shadows a fixture
        try client.put("users/15", "x")                           // sorts between the two fixtures
        try client.put("a", "x")
        try client.put("img/z", "x")                              // a prefix in both layers
        try client.put("zeta/k", "x")                             // a prefix in the store only

        let want = ["a", "docs/readme.txt", "img/dot.png", "img/z", "list.json", "users/1.json", "users/15",
                    "users/2.json", "zeta/k"]
        #expect(try S.listAll(client).keys == want)
        // Page by page, one key at a time, across the layers.
        #expect(try S.listAll(client, limit: 1).keys == want)
        #expect(try S.listAll(client, limit: 2).keys == want)
        #expect(try S.listAll(client, prefix: "users/", limit: 1).keys == ["users/1.json", "users/15", "users/2.json"])

        let page = S.json(try client.list("", query: "limit=100"))
        let entries = try #require(page["keys"] as? [[String: Any]])
        let sources = Dictionary(uniqueKeysWithValues: entries.map { ($0["key"] as! String, $0["source"] as? String) })
        #expect(sources["users/1.json"]! == nil, "a stored value shadows its fixture")
        #expect(sources["users/2.json"]! == "fixture")
        #expect(sources["a"]! == nil)

        // One level: common prefixes from both layers, once each, in order.
        let level = S.json(try client.list("", query: "delimiter=/"))
        #expect((level["keys"] as? [[String: Any]])?.map { $0["key"] as! String } == ["a", "list.json"])
        #expect(level["prefixes"] as? [String] == ["docs/", "img/", "users/", "zeta/"])
        let paged = S.json(try client.list("", query: "delimiter=/&limit=3"))
        #expect((paged["keys"] as? [[String: Any]])?.map { $0["key"] as! String } == ["a"])
        #expect(paged["prefixes"] as? [String] == ["docs/", "img/"])
        #expect(paged["next"] as? String == "img/")
        let rest = S.json(try client.list("", query: "delimiter=/&after=img/"))
        #expect((rest["keys"] as? [[String: Any]])?.map { $0["key"] as! String } == ["list.json"])
        #expect(rest["prefixes"] as? [String] == ["users/", "zeta/"])
        #expect(rest["next"] is NSNull)
    }

    @Test func watchersAndTheChangeFeedSeeARevertAsAChange() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        let client = server.client()
        let fixtureTag = try #require(client.get("users/1.json").header("ETag"))
        let storeTag = try #require(client.put("users/1.json", "{\"name\":\"bob\"}").header("ETag"))

        let events = try SSEClient(port: server.port, target: "/events?prefix=users/")
        defer { events.close() }
        #expect(try events.readHead() == 200)
        let port = server.port
        let watch = Background {
            try HTTPClientConnection(port: port, timeout: 20)
                .request("GET", "/store/users/1.json?wait=20", headers: [("If-None-Match", storeTag)])
        }
        #expect(Poll.holds(within: Poll.patience, every: 0.001) { server.server.watcherCount == 1 })
        #expect(try client.delete("users/1.json").status == 204)

        let woken = try watch.wait()
        #expect(woken.status == 200)
        #expect(woken.text == "{\"name\":\"ada\"}")
        #expect(woken.header("Larder-Source") == "fixture")
        #expect(woken.header("ETag") == fixtureTag)

        let revert = try #require(try events.nextEvent())
        #expect(revert.event == "put")
        let data = try #require(try JSONSerialization.jsonObject(with: Data(revert.data.utf8)) as? [String: Any])
        #expect(data["key"] as? String == "users/1.json")
        #expect(data["etag"] as? String == fixtureTag)
        #expect(data["source"] as? String == "fixture")

        try client.put("users/9", "x")
        _ = try events.nextEvent()
        #expect(try client.deletePrefix("").status == 200)
        let reset = try #require(try events.nextEvent())
        #expect(reset.event == "delete")
        let resetData = try #require(try JSONSerialization.jsonObject(with: Data(reset.data.utf8)) as? [String: Any])
        #expect(resetData["prefix"] as? String == "")
        #expect(resetData["deleted"] as? Int == 1)
        #expect(resetData["fixtures"] as? Int == 5, "the reset says how many fixtures the prefix reads as now")
    }

    @Test func theFixtureDirectoryIsNeverWritten() throws {
        let fixtures = try Self.makeFixtures()
        defer {
            chmod(fixtures, 0o755)
            try? FileManager.default.removeItem(atPath: fixtures)
        }
        let before = try Self.fingerprint(fixtures)
        chmod(fixtures + "/users", 0o555)
        chmod(fixtures, 0o555)
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let server = try Self.server(fixtures: fixtures, dataDirectory: dir)
            let client = server.client()
            for key in ["users/1.json", "users/2.json", "list.json", "docs/readme.txt", "img/dot.png", "new/key"] {
                try client.put(key, "overwritten")
                _ = try client.send("POST", "/store/" + key + "x", body: Array("1".utf8))
                try client.delete(key)
                try client.delete(key)
            }
            try client.deletePrefix("users/")
            try client.deletePrefix("")
            server.stop(keepData: true)
        }
        // A restart compiles the fixtures again and still reads them as they were.
        let restarted = try Self.server(fixtures: fixtures, dataDirectory: dir)
        defer { restarted.stop() }
        #expect(try restarted.client().get("users/1.json").text == "{\"name\":\"ada\"}")
        chmod(fixtures, 0o755)
        chmod(fixtures + "/users", 0o755)
        #expect(try Self.fingerprint(fixtures) == before)
    }

    @Test func badFixturesAreReportedOrSkipped() throws {
        let missing = "/nonexistent/fixtures-\(UUID().uuidString)"
        #expect(throws: StoreError.self) { try Self.server(fixtures: missing) }

        // A file whose path is not a valid key is skipped, the rest served.
        let fixtures = try Self.makeFixtures(["ok.json": Array("{}".utf8), "back\\slash": Array("x".utf8)])
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try Self.server(fixtures: fixtures)
        defer { server.stop() }
        #expect(try S.listAll(server.client()).keys == ["ok.json"])
    }

    @Test func theBinaryTakesFixturesFromAFlagOrTheEnvironment() throws {
        let fixtures = try Self.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        for (arguments, environment) in [(["--fixtures", fixtures], [String: String]()), ([], ["LARDER_FIXTURES": fixtures])] {
            let dir = TestServer.makeTempDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let child = try ChildServer(dataDirectory: dir, arguments: arguments, environment: environment)
            let response = try child.client().get("users/2.json")
            #expect(response.text == "{\"name\":\"grace\"}")
            #expect(response.header("Larder-Source") == "fixture")
            child.kill(SIGTERM)
            #expect(child.waitForExit() == 0)
        }
    }
}
