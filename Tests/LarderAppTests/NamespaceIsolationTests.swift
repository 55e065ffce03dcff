import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// `/ns/<name>/`: two namespaces used side by side each see only their own
/// keys, listings, expiry, watches, change feed, snapshots and fault rules,
/// and the default namespace sees neither.
@Suite(.blockingLane)
struct NamespaceIsolationTests {
    static func client(_ server: TestServer, _ namespace: String?) -> WireClient {
        let client = server.client()
        client.basePath = namespace.map { "/ns/" + $0 } ?? ""
        return client
    }

    static func summary(_ events: [SSEEvent]) -> [String] {
        events.map { "\($0.event) \($0.json?["key"] as? String ?? "")" }
    }

    @Test func twoNamespacesWrittenSideBySideEachSeeOnlyTheirOwnKeysAndListings() throws {
        let server = try TestServer()
        let (a, b, main) = (Self.client(server, "w1"), Self.client(server, "w2"), Self.client(server, nil))
        #expect(try a.put("k", "from w1").status == 201)
        #expect(try b.put("k", "from w2").status == 201)
        #expect(try b.put("only/b", "b").status == 201)
        #expect(try a.get("k").text == "from w1")
        #expect(try b.get("k").text == "from w2")
        #expect(try main.get("k").status == 404)
        #expect(try a.get("only/b").status == 404)
        #expect(try S.listAll(a).keys == ["k"])
        #expect(try S.listAll(b).keys == ["k", "only/b"])
        #expect(try S.listAll(main).keys.isEmpty)
        // A key created under a generated name is a path of its namespace.
        let created = try a.send("POST", "/store/gen/", body: Array("x".utf8))
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        #expect(location.hasPrefix("/ns/w1/store/gen/"), "Location: \(location)")
        #expect(try server.client().send("GET", location).text == "x")
    }

    @Test func resettingOneNamespaceLeavesTheOtherAndTheDefaultUntouched() throws {
        let server = try TestServer()
        let (a, b, main) = (Self.client(server, "w1"), Self.client(server, "w2"), Self.client(server, nil))
        for i in 0..<20 {
            #expect(try a.put("a/\(i)", "a").status == 201)
            #expect(try b.put("b/\(i)", "b").status == 201)
        }
        #expect(try main.put("m", "m").status == 201)
        let reset = try a.deletePrefix("")
        #expect(reset.status == 200)
        #expect(S.json(reset)["deleted"] as? Int == 20)
        #expect(try S.listAll(a).keys.isEmpty)
        #expect(try S.listAll(b).keys.count == 20)
        #expect(try main.get("m").text == "m")
    }

    @Test func expiryInOneNamespaceRemovesOnlyItsKey() throws {
        let server = try TestServer()
        let (a, b) = (Self.client(server, "w1"), Self.client(server, "w2"))
        #expect(try a.send("PUT", "/store/t?ttl=1", body: Array("short".utf8)).status == 201)
        #expect(try b.put("t", "stays").status == 201)
        try Poll.until(10, "w1's key expires") { try a.get("t").status == 404 }
        #expect(try b.get("t").text == "stays")
    }

    @Test func aWatchIsWokenOnlyByAWriteInItsOwnNamespace() throws {
        let server = try TestServer()
        let (a, b) = (Self.client(server, "w1"), Self.client(server, "w2"))
        let etag = try #require(try a.put("w", "v0").header("ETag"))
        #expect(try b.put("w", "v0").status == 201)
        let port = server.port
        let watch = Background { () throws -> ClientResponse in
            let connection = try HTTPClientConnection(port: port, timeout: 20)
            // wait=300: only a write can answer it before the 20 s socket timeout.
            return try connection.request("GET", "/ns/w1/store/w?wait=300", headers: [("If-None-Match", etag)])
        }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try b.put("w", "v1 in w2").status == 204)  // not w1's key: the watch goes on
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try a.put("w", "v1 in w1").status == 204)
        let answer = try watch.wait(Poll.patience)
        #expect(answer.status == 200)
        #expect(answer.text == "v1 in w1", "woken by w1's write, not by w2's")
    }

    @Test func eachNamespaceHasItsOwnChangeFeedAndEventHistory() throws {
        let server = try TestServer()
        let (a, b) = (Self.client(server, "w1"), Self.client(server, "w2"))
        #expect(try a.put("first", "1").status == 201)  // the namespace exists before its feed is read
        let readerA = try SSEClient(port: server.port, target: "/ns/w1/events?prefix=")
        let readerB = try SSEClient(port: server.port, target: "/ns/w2/events?prefix=")
        #expect(try readerA.readHead() == 200)
        #expect(try readerB.readHead() == 200)
        #expect(try a.put("x", "a").status == 201)
        #expect(try b.put("y", "b").status == 201)
        #expect(try a.delete("x").status == 204)
        let eventsA = try readerA.events(2, timeout: 6)
        let eventsB = try readerB.events(1, timeout: 6)
        #expect(Self.summary(eventsA) == ["put x", "delete x"], "\(eventsA)")
        #expect(Self.summary(eventsB) == ["put y"], "\(eventsB)")
        #expect(try readerB.nextEvent(timeout: 0.5) == nil)
        readerA.close()
        readerB.close()
        // Last-Event-ID replays this namespace's history only.
        let firstID = try #require(eventsA.first?.id)
        let replay = try SSEClient(port: server.port, target: "/ns/w1/events?prefix=", headers: [("Last-Event-ID", firstID)])
        #expect(try replay.readHead() == 200)
        #expect(Self.summary(try replay.events(1, timeout: 6)) == ["delete x"])
        #expect(try replay.nextEvent(timeout: 0.5) == nil)
        replay.close()
    }

    @Test func aSnapshotHoldsOnlyItsNamespaceAndRestoresIntoAnother() throws {
        let server = try TestServer()
        let (a, b) = (Self.client(server, "w1"), Self.client(server, "w2"))
        #expect(try a.put("s/1", "one").status == 201)
        #expect(try a.put("s/2", "two").status == 201)
        #expect(try b.put("other", "b").status == 201)
        let snapshot = try a.send("GET", "/snapshot")
        #expect(snapshot.status == 200)
        let lines = snapshot.text.split(separator: "\n")
        #expect(lines.count == 2, "\(snapshot.text)")
        #expect(!snapshot.text.contains("other"))
        let restored = try Self.client(server, "w3").send("POST", "/snapshot", body: snapshot.body)
        #expect(restored.status == 200, "\(restored.text)")
        #expect(try S.listAll(Self.client(server, "w3")).keys == ["s/1", "s/2"])
        #expect(try S.listAll(b).keys == ["other"])
    }

    /// A request for a namespace that exists is served straight from the
    /// server's route table by the namespace's own: a path it has no
    /// endpoint for is its 404, naming the path inside the namespace, and
    /// the server's own endpoints are not in it.
    @Test func anUnknownPathInAnExistingNamespaceIsItsOwn404() throws {
        let server = try TestServer()
        let a = Self.client(server, "w1")
        #expect(try a.put("k", "v").status == 201)
        let missing = try a.send("GET", "/nothing-here")
        #expect(missing.status == 404)
        #expect(missing.text.contains("no endpoint at /nothing-here;"), "\(missing.text)")
        #expect(try a.send("GET", "/metrics").status == 404)
        #expect(try a.get("k").text == "v")
    }

    @Test func faultRulesApplyOnlyInTheirNamespace() throws {
        let server = try TestServer { $0.allowFaults = true }
        let (a, b, main) = (Self.client(server, "w1"), Self.client(server, "w2"), Self.client(server, nil))
        #expect(try b.put("k", "b").status == 201)
        #expect(try main.put("k", "m").status == 201)
        let rules = try a.send("PUT", "/faults", body: Array(#"[{"prefix":"","status":503}]"#.utf8))
        #expect(rules.status == 200, "\(rules.text)")
        #expect(try a.get("k").status == 503)
        #expect(try b.get("k").status == 200)
        #expect(try main.get("k").status == 200)
        // A rule of the default namespace does not reach a namespace's paths.
        #expect(try main.send("PUT", "/faults", body: Array(#"[{"prefix":"/","status":500}]"#.utf8)).status == 200)
        #expect(try b.get("k").status == 200)
    }
}
