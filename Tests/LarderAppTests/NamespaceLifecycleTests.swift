import Foundation
import LarderDiskStore
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// Namespaces come and go: made by their first request over the fixtures,
/// listed, dropped one by one or all at once, dropped when idle, capped by
/// `--max-namespaces`, kept over a restart; bad names are refused and
/// nothing of them reaches the file system.
@Suite(.blockingLane)
struct NamespaceLifecycleTests {
    static func client(_ server: TestServer, _ namespace: String) -> WireClient {
        let client = server.client()
        client.basePath = "/ns/" + namespace
        return client
    }

    static func names(_ server: TestServer) throws -> [String] {
        let list = try server.client().send("GET", "/ns/")
        #expect(list.status == 200)
        let entries = S.json(list)["namespaces"] as? [[String: Any]] ?? []
        return entries.compactMap { $0["name"] as? String }
    }

    @Test func aFreshNamespaceStartsAsExactlyTheFixturesAndResetsToThem() throws {
        let fixtures = try FixtureDirectories.numbered(5)
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try TestServer { $0.fixturesDirectory = fixtures }
        let (a, b) = (Self.client(server, "w1"), Self.client(server, "w2"))
        #expect(try a.get("f/0003.json").text == "{\"i\":3}")
        #expect(try S.listAll(a).keys == (0..<5).map { String(format: "f/%04d.json", $0) })
        #expect(try a.put("f/0003.json", "changed in w1").status == 204)
        #expect(try a.put("mine", "w1's").status == 201)
        #expect(try b.get("f/0003.json").text == "{\"i\":3}")
        #expect(try server.client().get("f/0003.json").text == "{\"i\":3}")
        #expect(try a.deletePrefix("").status == 200)
        #expect(try a.get("f/0003.json").text == "{\"i\":3}")
        #expect(try a.get("mine").status == 404)
        #expect(try S.listAll(a).keys.count == 5)
    }

    @Test func namespacesAreListedAndDroppedOneByOneOrAllAtOnce() throws {
        let server = try TestServer()
        let main = server.client()
        #expect(try main.send("DELETE", "/ns/never").status == 404)
        #expect(try Self.names(server).isEmpty)
        #expect(try Self.client(server, "b").put("k", "12345").status == 201)
        #expect(try Self.client(server, "a").put("k", "1").status == 201)
        #expect(try Self.client(server, "a").put("l", "22").status == 201)
        // On PostgreSQL the totals follow the change feed, which a loaded
        // machine may deliver after the write's answer (it waits at most 2 s).
        var list: [[String: Any]] = []
        try Poll.until(30, "the namespaces' totals") {
            list = S.json(try main.send("GET", "/ns/"))["namespaces"] as? [[String: Any]] ?? []
            return list.map { $0["keys"] as? Int } == [2, 1]
        }
        #expect(list.map { $0["name"] as? String } == ["a", "b"])
        #expect(list.map { $0["keys"] as? Int } == [2, 1])
        #expect(list.map { $0["bytes"] as? Int } == [3, 5])
        #expect(try main.send("GET", "/metrics").text.contains("\nlarder_namespaces 2\n"))

        #expect(try main.send("DELETE", "/ns/a").status == 204)
        #expect(try main.send("DELETE", "/ns/a").status == 404)
        #expect(try Self.names(server) == ["b"])
        // A dropped namespace comes back empty, and exists again from its next write.
        #expect(try Self.client(server, "a").get("k").status == 404)
        #expect(try Self.names(server) == ["b"])
        #expect(try Self.client(server, "a").put("k", "1").status == 201)
        #expect(try Self.names(server) == ["a", "b"])
        #expect(try main.put("default", "stays").status == 201)
        #expect(try main.send("DELETE", "/ns/").status == 204)
        #expect(try Self.names(server).isEmpty)
        #expect(try main.get("default").text == "stays")
        #expect(try main.send("GET", "/metrics").text.contains("\nlarder_namespaces 0\n"))
        try Self.pollUntilDroppedDataIsGone(server, directories: ["/ns", "/ns-trash"])
    }

    /// Waits until the data of the dropped namespaces is deleted: on the
    /// disk store the data directory's `directories`, on PostgreSQL the
    /// schemas no namespace has any more.
    static func pollUntilDroppedDataIsGone(_ server: TestServer, directories: [String]) throws {
        if let schema = server.postgresSchema {
            try Poll.until(20, "dropped namespaces' schemas are dropped") {
                try TestPostgres.shared().psql("""
                    SELECT count(*) FROM pg_namespace WHERE starts_with(nspname, '\(schema)$ns')
                      AND nspname NOT IN (SELECT schema FROM "\(schema)".larder_namespaces)
                    """) == "0"
            }
            return
        }
        try Poll.until(20, "dropped namespaces' files are deleted") {
            directories.allSatisfy { ((try? FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + $0)) ?? []).isEmpty }
        }
    }

    /// A namespace exists from its first write: reads open it (and see the
    /// fixtures), but it is not listed, counted or droppable until a write,
    /// and a server that stops does not keep it.
    @Test func aNamespaceOnlyReadDoesNotExistUntilItsFirstWrite() throws {
        let fixtures = try FixtureDirectories.numbered(2)
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let schema = TestServer.usesPostgres ? TestPostgres.makeSchemaName() : nil
        let make = { () throws -> TestServer in
            try TestServer(dataDirectory: schema == nil ? dir : nil, postgresSchema: schema) { $0.fixturesDirectory = fixtures }
        }
        do {
            let server = try make()
            let (read, written) = (Self.client(server, "read"), Self.client(server, "written"))
            #expect(try read.get("f/0001.json").text == "{\"i\":1}")
            #expect(try read.get("absent").status == 404)
            #expect(try S.listAll(read).keys.count == 2)
            #expect(try Self.names(server).isEmpty)
            #expect(try server.client().send("GET", "/metrics").text.contains("\nlarder_namespaces 0\n"))
            #expect(try server.client().send("DELETE", "/ns/read").status == 404)
            // A watcher on a namespace nobody wrote gets its first write
            // (woken by it, or, if the write came first, answered at once).
            let port = server.port
            let watch = Background { () throws -> ClientResponse in
                let connection = try HTTPClientConnection(port: port, timeout: 30)
                return try connection.request("GET", "/ns/written/store/k?wait=20")
            }
            #expect(try written.get("k").status == 404)
            #expect(try written.put("k", "first").status == 201)
            #expect(try watch.wait().text == "first")
            #expect(try Self.names(server) == ["written"])
            #expect(try server.client().send("GET", "/metrics").text.contains("\nlarder_namespaces 1\n"))
            server.stop(keepData: true)
        }
        let again = try make()
        #expect(try Self.names(again) == ["written"])
        #expect(try Self.client(again, "written").get("k").text == "first")
    }

    /// A dropped namespace's event streams end (a mirroring reader sees the
    /// end, not a silence) and its watchers are answered.
    @Test func aDropEndsTheNamespacesEventStreams() throws {
        let server = try TestServer()
        #expect(try Self.client(server, "s").put("k", "v").status == 201)
        let stream = try SSEClient(port: server.port, target: "/ns/s/events?prefix=")
        defer { stream.close() }
        #expect(try stream.readHead() == 200)
        let other = try SSEClient(port: server.port, target: "/ns/t/events?prefix=")
        defer { other.close() }
        #expect(try other.readHead() == 200)
        #expect(try server.client().send("DELETE", "/ns/s").status == 204)
        #expect(try stream.nextEvent() == nil)
        #expect(stream.ended)
        #expect(try Self.client(server, "t").put("k", "v").status == 201)
        #expect(try other.nextEvent()?.json?["key"] as? String == "k")
        #expect(!other.ended)
    }

    /// A drop right after a reset, then the same name at once: the dropped
    /// store's background work (the reset's delete) never reaches the new one.
    @Test func aNameDroppedRightAfterAResetStartsAfreshAndKeepsWhatIsWrittenNext() throws {
        let server = try TestServer()
        let client = Self.client(server, "again")
        var snapshot: [UInt8] = []
        for i in 0..<3_000 { snapshot += Array("{\"key\":\"k/\(i)\",\"text\":\"v\"}\n".utf8) }
        for round in 0..<3 {
            #expect(try client.send("POST", "/snapshot", body: snapshot).status == 200)
            #expect(try client.deletePrefix("").status == 200)
            let started = Date()
            #expect(try server.client().send("DELETE", "/ns/again").status == 204)
            print("drop right after a reset of 3000 keys, round \(round): \(String(format: "%.1f", Date().timeIntervalSince(started) * 1000)) ms")
            #expect(try client.put("after", "round \(round)").status == 201)
        }
        try Self.pollUntilDroppedDataIsGone(server, directories: ["/ns-trash"])
        #expect(try client.get("after").text == "round 2")
        #expect(try S.listAll(client).keys == ["after"])
    }

    @Test func oneNamespaceMoreThanTheLimitIs507() throws {
        let server = try TestServer { $0.maxNamespaces = 3 }
        for name in ["n1", "n2", "n3"] { #expect(try Self.client(server, name).put("k", "v").status == 201) }
        S.expectError(try Self.client(server, "n4").put("k", "v"), status: 507, code: "namespace_limit")
        #expect(try Self.client(server, "n2").get("k").text == "v")  // the ones there still answer
        #expect(try server.client().send("DELETE", "/ns/n1").status == 204)
        #expect(try Self.client(server, "n4").put("k", "v").status == 201)
    }

    // The idle tests hold on any load: a sweep drops, in one step, every
    // namespace idle long enough, so another namespace written later being
    // dropped proves a sweep would have dropped this one.

    /// Parks a journal follower on `namespace` that only a DELETE would
    /// answer, and waits until the server counts it.
    static func follow(_ server: TestServer, _ namespace: String) throws -> HTTPClientConnection {
        let before = server.server.namespaceListenerCount
        let follower = try HTTPClientConnection(port: server.port)
        try follower.send("GET /ns/\(namespace)/journal?since=0&method=DELETE&wait=120 HTTP/1.1\r\nHost: x\r\n\r\n")
        try Poll.until(10, "the follower of \(namespace) to park") { server.server.namespaceListenerCount == before + 1 }
        return follower
    }

    @Test func aNamespaceWithNoRequestForTheIdleTimeIsDropped() throws {
        let server = try TestServer { $0.namespaceIdleSeconds = 1 }
        // A client waiting on a namespace keeps it, however long it waits:
        // here a watch. A follower holds it until the watch has parked.
        let follower = try Self.follow(server, "waited")
        let etag = try #require(try Self.client(server, "waited").put("k", "v").header("ETag"))
        let port = server.port
        let watch = Background { () throws -> ClientResponse in
            let connection = try HTTPClientConnection(port: port, timeout: 30)
            return try connection.request("GET", "/ns/waited/store/k?wait=60", headers: [("If-None-Match", etag)])
        }
        try Poll.until(10, "the watch to park") { server.server.namespaceListenerCount == 2 }
        follower.close()
        try Poll.until(10, "the follower to be forgotten") { server.server.namespaceListenerCount == 1 }
        // Its idle time runs from its last request.
        let started = Date()
        #expect(try Self.client(server, "idle").put("k", "v").status == 201)
        try Poll.until(15, "the idle namespace is dropped") { try !Self.names(server).contains("idle") }
        #expect(Date().timeIntervalSince(started) >= 0.9)
        #expect(try Self.names(server) == ["waited"])
        let waited = Self.client(server, "waited")
        #expect(try waited.get("k").text == "v")
        #expect(try waited.put("k", "woken").status == 204)
        #expect(try watch.wait().text == "woken")
        #expect(try Self.client(server, "idle").get("k").status == 404)  // back, empty
    }

    @Test func aFollowedNamespaceIsKeptAndIdleOnlyFromWhenItsLastFollowerLeft() throws {
        let server = try TestServer { $0.namespaceIdleSeconds = 1 }
        let follower = try Self.follow(server, "followed")
        #expect(try Self.client(server, "followed").put("k", "v").status == 201)
        #expect(try Self.client(server, "first").put("k", "v").status == 201)
        try Poll.until(15, "the namespace written after the follower came is dropped") { try !Self.names(server).contains("first") }
        #expect(try Self.names(server) == ["followed"])
        // A long poll is a request until answered: a namespace written while
        // the follower still waits is not dropped before this one, so a
        // follower that polls again at once never finds it gone.
        #expect(try Self.client(server, "second").put("k", "v").status == 201)
        follower.close()
        try Poll.until(10, "the follower to be forgotten") { server.server.namespaceListenerCount == 0 }
        var droppedFirst = false
        try Poll.until(15, "the namespace written while it was followed is dropped") {
            let names = try Self.names(server)
            droppedFirst = droppedFirst || (names.contains("second") && !names.contains("followed"))
            return !names.contains("second")
        }
        #expect(!droppedFirst, "dropped before a namespace written while it was followed")
        // (Not read back here: on PostgreSQL the dropped schema goes after
        // the namespace leaves the list, and a read meanwhile reopens it.)
        try Poll.until(15, "the namespace is dropped once nobody follows it") { try Self.names(server).isEmpty }
    }

    @Test func namespacesAndTheirValuesAreKeptOverARestart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The same data directory, or the same schema of the database.
        let schema = TestServer.usesPostgres ? TestPostgres.makeSchemaName() : nil
        do {
            let first = try TestServer(dataDirectory: schema == nil ? dir : nil, postgresSchema: schema)
            #expect(try Self.client(first, "kept").put("k", "before the restart").status == 201)
            first.stop(keepData: true)
        }
        let second = try TestServer(dataDirectory: schema == nil ? dir : nil, postgresSchema: schema)
        #expect(try Self.names(second) == ["kept"])
        #expect(try Self.client(second, "kept").get("k").text == "before the restart")
        #expect(try second.client().get("k").status == 404)
    }

    @Test(.diskStoreOnly("looks at the data directory"))
    func badNamesAre400AndNothingReachesOutsideTheDataDirectory() throws {
        let outer = TestServer.makeTempDirectory(prefix: "larder-ns-outer-")
        defer { try? FileManager.default.removeItem(atPath: outer) }
        let server = try TestServer(dataDirectory: outer + "/data")
        let hostile = ["..", ".", "a%2Fb", "%2e%2e", "%2E%2E%2Fx", String(repeating: "n", count: 65), "", "%C3%BC", "ü", "a%00b",
                       "..%2F..%2Fetc", "a%20b", "a:b", "~x", "a%5Cb"]
        let connection = try server.connection()
        for name in hostile {
            for (method, path) in [("PUT", "/store/k"), ("GET", "/store/"), ("DELETE", "/store/"), ("POST", "/snapshot"), ("GET", "/events")] {
                let response = try connection.request(method, "/ns/" + name + path, body: method == "GET" ? nil : Array("x".utf8))
                #expect(response.status == 400, "\(method) /ns/\(name)\(path): \(response.status) \(response.text)")
                #expect(response.text.contains("invalid_namespace"), "\(method) /ns/\(name)\(path): \(response.text)")
            }
            #expect(try connection.request("DELETE", "/ns/" + name).status == (name.isEmpty ? 204 : 400), "DELETE /ns/\(name)")
        }
        // NUL and a raw `/` inside the name: the HTTP layer or the route
        // refuses them before any namespace is made.
        let raw = try server.connection()
        try raw.send("PUT /ns/a\u{0}b/store/k HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
        #expect(try raw.readResponse().status == 400)
        #expect(try connection.request("PUT", "/ns/a/b/store/k", body: Array("x".utf8)).status == 404)
        #expect(try Self.names(server).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outer) == ["data"])
        let made = (try? FileManager.default.contentsOfDirectory(atPath: outer + "/data/ns")) ?? []
        #expect(made.isEmpty, "namespace directories: \(made)")
    }

    /// A store that brings no namespaces (an app's own store) answers every
    /// `/ns/` path with a clear 501.
    @Test func aStoreWithoutNamespacesAnswers501() throws {
        let server = try TestServer { setup in
            let options = setup.store
            setup.openStore = { changes, logger in try DiskStore(options: options, logger: logger, changes: changes) }
        }
        for (method, path) in [("GET", "/ns/"), ("PUT", "/ns/w1/store/k"), ("DELETE", "/ns/w1"), ("GET", "/ns")] {
            S.expectError(try server.client().send(method, path, body: method == "PUT" ? Array("x".utf8) : nil),
                          status: 501, code: "namespaces_unsupported")
        }
        #expect(try server.client().put("k", "default works").status == 201)
    }

    @Test func theTokenGuardsEveryNamespace() throws {
        let server = try TestServer { $0.token = "s3cret" }
        #expect(try Self.client(server, "w1").put("k", "v").status == 401)
        #expect(try server.client().send("GET", "/ns/").status == 401)
        let authorised = Self.client(server, "w1")
        authorised.token = "s3cret"
        #expect(try authorised.put("k", "v").status == 201)
        #expect(try authorised.get("k").text == "v")
    }

    @Test(.diskStoreOnly("30,000 restored keys take minutes on PostgreSQL; docs/namespaces.md gives its reset time"))
    func resettingANamespaceOf30000KeysLeavesAnotherAnswering() throws {
        let server = try TestServer()
        let big = Self.client(server, "big")
        var snapshot: [UInt8] = []
        for i in 0..<30_000 { snapshot += Array("{\"key\":\"k/\(i % 100)/\(i)\",\"text\":\"v\(i)\"}\n".utf8) }
        let restored = try big.send("POST", "/snapshot", body: snapshot)
        #expect(restored.status == 200, "\(restored.text)")
        #expect(S.json(restored)["restored"] as? Int == 30_000)
        let other = Self.client(server, "other")
        #expect(try other.put("k", "still here").status == 201)

        let stop = Locked(false)
        let port = server.port
        let reads = Background { () throws -> (ok: Int, failed: Int) in
            let client = WireClient(port: port)
            client.basePath = "/ns/other"
            var ok = 0, failed = 0
            while !stop.withLock({ $0 }) {
                if try client.get("k").text == "still here" { ok += 1 } else { failed += 1 }
            }
            return (ok, failed)
        }
        Thread.sleep(forTimeInterval: 0.05)
        let started = Date()
        let reset = try big.deletePrefix("")
        let seconds = Date().timeIntervalSince(started)
        Thread.sleep(forTimeInterval: 0.05)
        stop.withLock { $0 = true }
        let (ok, failed) = try reads.wait()
        print("reset of a namespace holding 30000 keys: \(String(format: "%.2f", seconds * 1000)) ms; other namespace: \(ok) reads meanwhile")
        #expect(reset.status == 200)
        #expect(S.json(reset)["deleted"] as? Int == 30_000)
        #expect(failed == 0)
        #expect(ok > 0)
        #expect(try S.listAll(big).keys.isEmpty)
    }

    @Test(.diskStoreOnly("a child server on the disk store"))
    func aHundredNamespacesWithFixturesCostUnder64MiBOfRSS() throws {
        let fixtures = try FixtureDirectories.numbered(200)
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--fixtures", fixtures, "--no-fsync", "--log-level", "warning"])
        defer { child.kill(SIGTERM); _ = child.waitForExit() }
        let client = child.client()
        #expect(try client.get("f/0001.json").status == 200)
        #expect(try client.put("warm", "up").status == 201)
        let before = try #require(child.rssKiB())
        for n in 0..<100 {
            client.basePath = "/ns/w\(n)"
            #expect(try client.put("k", "value \(n)").status == 201)
            #expect(try client.get("f/0007.json").text == "{\"i\":7}")
            #expect(try client.get("k").text == "value \(n)")
        }
        client.basePath = ""
        let list = S.json(try client.send("GET", "/ns/"))["namespaces"] as? [[String: Any]] ?? []
        #expect(list.count == 100)
        let after = try #require(child.rssKiB())
        print("RSS with 100 namespaces over 200 fixtures: \(before) KiB before, \(after) KiB after (+\(after - before) KiB)")
        #expect(after - before < 64 * 1024, "100 namespaces cost \(after - before) KiB")
    }
}
