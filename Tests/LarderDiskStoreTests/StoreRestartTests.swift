import Foundation
import LarderTestSupport
import LarderWire
import LarderDiskStore
import LarderStorage
import LarderValueFile
import Testing

private typealias S = StoreTestSupport

/// Values survive a restart of the server on the same data directory, and
/// so does the version counter behind ETags (the `version` file): above every
/// ETag issued, read back even when empty, following the clock after a restart.
@Suite(.blockingLane) struct StoreRestartTests {
    static func key(_ i: Int) -> String {
        switch i % 4 {
        case 0: "restart/\(i)"
        case 1: "restart/deep/\(i % 9)/\(i)"
        case 2: "top\(i)"
        default: "ü/\(i)"
        }
    }

    static func value(_ i: Int) -> [UInt8] {
        i % 10 == 0 ? Bytes.random(count: 70_000 + i, seed: UInt64(i)) : Array("value #\(i)".utf8)
    }

    /// Stops the old server and starts a new one on `dir`. `shutdown()`
    /// releases the data directory's lock before it returns, so the new
    /// server must open it at once.
    static func restart(_ old: inout TestServer?, dir: String) throws -> TestServer {
        old?.stop(keepData: true)
        return try TestServer(dataDirectory: dir)
    }

    /// A value sent gzip-encoded: long enough that its gzip form is smaller,
    /// so a GET accepting gzip gets the bytes as sent.
    static let zipped = Array(String(repeating: "zipped ", count: 100).utf8)

    @Test func valuesSurviveRestart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var first: TestServer? = try TestServer(dataDirectory: dir)
        var etags: [String: String] = [:]
        do {
            let client = first!.client()
            for i in 0..<200 {
                let put = try S.put(client, key: Self.key(i), Self.value(i), contentType: "type/\(i)")
                #expect(put.status == 201)
                etags[Self.key(i)] = put.header("ETag")
            }
            // One gzip upload, one replaced value, one deleted value.
            #expect(try client.put("gz", S.gzip(Self.zipped, name: "n"), headers: [("Content-Encoding", "gzip")]).status == 201)
            #expect(try client.put("top2", "replaced", contentType: "text/replaced").status == 204)
            #expect(try client.delete("top6").status == 204)
        }
        let gzSent = S.gzip(Self.zipped, name: "n")
        let second = try Self.restart(&first, dir: dir)
        defer { second.stop(keepData: true) }
        let client = second.client()
        for i in 0..<200 where i != 2 && i != 6 {
            let get = try S.get(client, key: Self.key(i))
            #expect(get.status == 200, "\(Self.key(i))")
            #expect(get.body == Self.value(i), "\(Self.key(i))")
            #expect(get.header("Content-Type") == "type/\(i)")
            #expect(get.header("ETag") == etags[Self.key(i)])
        }
        #expect(try client.get("top2").text == "replaced")
        #expect(try client.get("top2").header("Content-Type") == "text/replaced")
        #expect(try client.get("top6").status == 404)
        #expect(try client.get("gz", headers: [("Accept-Encoding", "gzip")]).body == gzSent)
        #expect(try client.get("gz").body == Self.zipped)
        let listing = try S.listAll(client)
        #expect(listing.keys.count == 200)
        // The restarted server's count is right: a full delete reports it.
        // ETags keep increasing after a restart.
        let put = try client.put("restart/0", "after")
        #expect(put.status == 204)
        #expect(put.header("ETag") != etags["restart/0"])
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 200)
    }

    @Test func deleteAllSurvivesRestart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var first: TestServer? = try TestServer(dataDirectory: dir)
        do {
            let client = first!.client()
            for i in 0..<50 { #expect(try S.put(client, key: Self.key(i), Self.value(i)).status == 201) }
            #expect(try client.deletePrefix("").json?["deleted"] as? Int == 50)
            #expect(try client.put("survivor", "after reset").status == 201)
            for i in 0..<10 { #expect(try client.put("half/\(i)", "h").status == 201) }
            #expect(try client.deletePrefix("half/").json?["deleted"] as? Int == 10)
        }
        var second: TestServer? = try Self.restart(&first, dir: dir)
        do {
            let client = second!.client()
            #expect(try S.listAll(client).keys == ["survivor"])
            for i in 0..<50 { #expect(try S.get(client, key: Self.key(i)).status == 404) }
            #expect(try client.get("half/1").status == 404)
            #expect(try client.get("survivor").text == "after reset")
            #expect(try client.deletePrefix("").json?["deleted"] as? Int == 1)
        }
        let third = try Self.restart(&second, dir: dir)
        defer { third.stop() }
        let client = third.client()
        #expect(try S.listAll(client).keys.isEmpty)
        #expect(try client.get("survivor").status == 404)
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 0)
        // Old generations and trash are gone once the background work is done.
        third.diskStore?.drainBackgroundWork()
        let current = try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/values")
        let generations = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("gen-") }
        #expect(generations == [current], "\(generations)")
        let trash = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/trash")) ?? []
        #expect(trash.isEmpty, "\(trash)")
    }

    @Test func staleTempFilesAreRemovedAtStartUp() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var first: TestServer? = try TestServer(dataDirectory: dir)
        do {
            let client = first!.client()
            #expect(try client.put("users/1", "one").status == 201)
            #expect(try client.put("users/deep/2", "two").status == 201)
            #expect(try client.put("top", "top").status == 201)
        }
        first?.stop(keepData: true)
        first = nil
        let values = dir + "/values"
        let temps = [values + "/\\tDEADBEEF", values + "/users\\/\\tDEADBEEF", values + "/users\\/deep\\/\\t0123456789abcdef"]
        for path in temps {
            // A half-written value: a gzip header and nothing else.
            #expect(FileManager.default.createFile(atPath: path, contents: Data([0x1F, 0x8B, 0x08, 0x04, 0, 0])), "\(path)")
        }
        let second = try TestServer(dataDirectory: dir)
        defer { second.stop() }
        try second.waitForIndex()  // the start-up scan removes them, in the background
        for path in temps { #expect(!FileManager.default.fileExists(atPath: path), "\(path) is still there") }
        let client = second.client()
        #expect(try S.listAll(client).keys == ["top", "users/1", "users/deep/2"])
        #expect(try client.get("users/1").text == "one")
        #expect(try client.get("users/deep/2").text == "two")
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 3)
    }

    @Test func versionCeilingOnDiskIsAboveEveryETagIssued() throws {
        let server = try TestServer()
        defer { server.stop() }
        let etag = try #require(try server.client().put("k", "v").header("ETag"))
        let version = try #require(UInt64(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")), radix: 16))
        let text = try String(contentsOfFile: server.dataDirectory + "/version", encoding: .utf8)
        let ceiling = try #require(UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(ceiling > version)
    }

    @Test func anEmptyVersionFileDoesNotStopTheServer() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try TestServer(dataDirectory: dir)
        try first.client().put("k", "v")
        first.stop(keepData: true)
        _ = FileManager.default.createFile(atPath: dir + "/version", contents: Data())
        let second = try TestServer(dataDirectory: dir)
        defer { second.stop() }
        #expect(try second.client().get("k").text == "v")
        #expect(try second.client().put("k", "w").status == 204)
    }

    @Test func versionsAfterACleanRestartFollowTheClock() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func version(_ response: ClientResponse) throws -> UInt64 {
            let etag = try #require(response.header("ETag"))
            return try #require(UInt64(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")), radix: 16))
        }
        let first = try TestServer(dataDirectory: dir)
        let before = try version(first.client().put("k", "1"))
        first.stop(keepData: true)
        let second = try TestServer(dataDirectory: dir)
        defer { second.stop() }
        let after = try version(second.client().put("k", "2"))
        #expect(after > before)
        // Not an hour ahead: within a minute of the first write.
        #expect(after - before < 60_000_000_000)
    }
}
