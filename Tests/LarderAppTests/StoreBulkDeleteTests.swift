import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Bulk delete".
@Suite(.blockingLane) struct StoreBulkDeleteTests {
    static let neighbours = ["users", "users2/x", "users!", "usersX", "user/1", "other/users/1", "u"]

    @Test func deletePrefixRemovesExactlyThatPrefix() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        var doomed: [String] = []
        for i in 0..<57 { doomed.append("users/\(i)") }
        for i in 0..<9 { doomed.append("users/archive/\(i)") }
        doomed += ["users/archive/deep/er/x", "users/" + String(repeating: "L", count: 255) + "/y"]
        for key in doomed + Self.neighbours { #expect(try client.put(key, "v:" + key).status == 201) }

        let response = try client.deletePrefix("users/")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(response.json?["deleted"] as? Int == doomed.count)
        #expect(response.json?.count == 1)
        for key in doomed { #expect(try client.get(key).status == 404, "\(key) survived") }
        for key in Self.neighbours { #expect(try client.get(key).text == "v:" + key, "\(key) was touched") }
        S.expectKeys(try S.listAll(client).keys, S.byteSorted(Self.neighbours))
        #expect(try S.listAll(client, prefix: "users/").keys.isEmpty)
        #expect(!(try S.listAll(client, delimiter: true).prefixes.contains("users/")))
        // Again: nothing left.
        #expect(try client.deletePrefix("users/").json?["deleted"] as? Int == 0)
        // The prefix is usable right away.
        #expect(try client.put("users/1", "new").status == 201)
        #expect(try client.get("users/1").text == "new")
        #expect(try client.get("users").text == "v:users")
    }

    @Test func deleteNestedPrefixLeavesParent() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        for key in ["a/b/c/1", "a/b/c/2", "a/b/c", "a/b/1", "a/1"] { #expect(try client.put(key, key).status == 201) }
        #expect(try client.deletePrefix("a/b/c/").json?["deleted"] as? Int == 2)
        #expect(try S.listAll(client).keys == ["a/1", "a/b/1", "a/b/c"])
        #expect(try client.deletePrefix("a/b/").json?["deleted"] as? Int == 2)
        #expect(try S.listAll(client).keys == ["a/1"])
        #expect(try client.deletePrefix("a/").json?["deleted"] as? Int == 1)
        #expect(try S.listAll(client).keys.isEmpty)
    }

    @Test func deleteAbsentPrefix() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("there/1", "x").status == 201)
        #expect(try client.put("nothere", "file, not a prefix").status == 201)
        for prefix in ["nothing/", "there/1/", "nothere/", "the/", "a/b/c/"] {
            let response = try client.deletePrefix(prefix)
            #expect(response.status == 200, "DELETE /store/\(prefix)")
            #expect(response.json?["deleted"] as? Int == 0, "DELETE /store/\(prefix): \(response.text)")
        }
        #expect(try client.get("there/1").text == "x")
        #expect(try client.get("nothere").text == "file, not a prefix")
        // On an empty store, everything is 0 too.
        let empty = try TestServer()
        defer { empty.stop() }
        #expect(try empty.client().deletePrefix("").json?["deleted"] as? Int == 0)
        #expect(try empty.client().deletePrefix("x/").json?["deleted"] as? Int == 0)
    }

    @Test func deleteEverything() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        var keys = (0..<120).map { "k/\($0 % 7)/\($0)" }
        keys += ["top", "a", "a/b", "é/ü", String(repeating: "x", count: 255) + "/y"]
        for key in keys { #expect(try S.put(client, key: key, Array(key.utf8)).status == 201) }
        let response = try client.deletePrefix("")
        #expect(response.status == 200)
        #expect(response.json?["deleted"] as? Int == keys.count)
        for key in keys.prefix(10) + keys.suffix(5) { #expect(try S.get(client, key: key).status == 404) }
        #expect(try S.listAll(client).keys.isEmpty)
        #expect(try S.listAll(client, delimiter: true).prefixes.isEmpty)
        // New writes right after are creates and work.
        for key in keys.suffix(5) {
            #expect(try S.put(client, key: key, Array("new".utf8)).status == 201)
            #expect(try S.get(client, key: key).text == "new")
        }
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 5)
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 0)
        // `DELETE /store` without the slash is the same reset.
        #expect(try client.put("again", "1").status == 201)
        let bare = try client.send("DELETE", "/store")
        #expect(bare.status == 200)
        #expect(bare.json?["deleted"] as? Int == 1)
        server.diskStore?.drainBackgroundWork()
        #expect(S.valueFiles(server.dataDirectory).isEmpty)
    }

    /// Writes keep working while other prefixes are bulk-deleted, and the
    /// counts of all bulk deletes add up to what was written there.
    @Test func bulkDeleteWhileWriting() throws {
        let server = try TestServer()
        defer { server.stop() }
        let port = server.port
        let counts = Counts()
        let errors = S.onThreads(3) { t in
            let client = WireClient(port: port)
            if t < 2 {
                for i in 0..<150 {
                    let r = try client.put("w\(t)/\(i % 10)/\(i)", "x")
                    if r.status != 201 && r.status != 204 { throw StoreTestFailure("PUT: \(r.status) \(r.text)") }
                    if r.status == 201 { counts.add(written: 1) }
                }
            } else {
                for _ in 0..<30 {
                    for w in 0..<2 {
                        let r = try client.deletePrefix("w\(w)/")
                        guard r.status == 200, let n = r.json?["deleted"] as? Int else { throw StoreTestFailure("DELETE: \(r.status)") }
                        counts.add(deleted: n)
                    }
                }
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        let client = server.client()
        let left = try S.listAll(client).keys.count
        let final = try client.deletePrefix("").json?["deleted"] as? Int ?? -1
        #expect(final == left)
        #expect(counts.written == counts.deleted + left, "written \(counts.written), bulk-deleted \(counts.deleted), left \(left)")
    }

    final class Counts: @unchecked Sendable {
        private let lock = NSLock()
        private var w = 0, d = 0
        func add(written: Int = 0, deleted: Int = 0) { lock.lock(); w += written; d += deleted; lock.unlock() }
        var written: Int { lock.lock(); defer { lock.unlock() }; return w }
        var deleted: Int { lock.lock(); defer { lock.unlock() }; return d }
    }
}
