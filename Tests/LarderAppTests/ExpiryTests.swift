import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// `PUT ?ttl=SECONDS`: the key reads as absent after its time, leaves the
/// listings, stops satisfying preconditions, and its file is swept from
/// the data directory, also after a restart.
@Suite(.blockingLane) struct ExpiryTests {
    // MARK: - Helpers

    /// An RFC 9110 IMF-fixdate, parsed without the server's code.
    static func httpDate(_ text: String?) -> Date? {
        guard let text else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }

    static func isoDate(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }

    /// The listing entry of `key` under `prefix` (nil when it is not listed).
    static func listed(_ client: WireClient, _ prefix: String, _ key: String) throws -> [String: Any]? {
        let response = try client.list(prefix)
        #expect(response.status == 200, "listing: \(response.status) \(response.text)")
        let keys = response.json?["keys"] as? [[String: Any]] ?? []
        return keys.first { $0["key"] as? String == key }
    }

    /// Polls `condition` every 20 ms until it holds or `seconds` pass; the seconds it took, nil on timeout.
    static func valueFileExists(_ dataDirectory: String, _ key: String) -> Bool {
        S.valueFiles(dataDirectory).contains(S.diskPath(key))
    }

    // MARK: - Tests

    @Test func ttlKeyIsReadableThenAbsentAndLeavesListings() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.put("exp/stay", "no ttl").status == 201)
        let before = Date()
        let put = try client.send("PUT", "/store/exp/a?ttl=1", body: Array("short-lived".utf8))
        let after = Date()
        #expect(put.status == 201)
        #expect(put.header("ETag") != nil)
        let expiresHeader = put.header("Larder-Expires")
        let expires = Self.httpDate(expiresHeader)
        #expect(expires != nil, "Larder-Expires on the PUT answer is not an HTTP date: \(expiresHeader ?? "missing")")
        if let expires {
            // One second after the PUT was handled, rounded to the second
            // (the HTTP date's precision): between the request and its answer.
            #expect(expires.timeIntervalSince(before) >= -0.01 && expires.timeIntervalSince(after) <= 2,
                    "Larder-Expires \(expiresHeader!) is not about one second after the PUT")
        }

        let get = try client.get("exp/a")
        #expect(get.status == 200)
        #expect(get.text == "short-lived")
        #expect(get.header("Larder-Expires") == expiresHeader, "GET's Larder-Expires")
        #expect(try client.head("exp/a").header("Larder-Expires") == expiresHeader, "HEAD's Larder-Expires")
        #expect(try client.get("exp/stay").header("Larder-Expires") == nil, "a value without ttl has no Larder-Expires")

        // Listed with an ISO 8601 `expires` near the header's date; the other has null.
        let entry = try Self.listed(client, "exp/", "exp/a")
        #expect(entry != nil, "exp/a is not listed before it expires")
        let listedExpires = entry?["expires"] as? String
        #expect(listedExpires.flatMap(Self.isoDate) != nil, "expires is not ISO 8601: \(String(describing: entry?["expires"]))")
        if let listedDate = listedExpires.flatMap(Self.isoDate), let expires {
            #expect(abs(listedDate.timeIntervalSince(expires)) <= 1.01, "listing \(listedExpires!) vs header \(expiresHeader!)")
        }
        let stay = try Self.listed(client, "exp/", "exp/stay")
        #expect(stay?["expires"] is NSNull, "a value without ttl lists expires: null, got \(String(describing: stay?["expires"]))")

        // Absent once its deadline has passed, and not before it.
        let gone = try Poll.elapsed(within: Poll.patience, every: 0.02) { try client.get("exp/a").status == 404 }
        let elapsed = Date().timeIntervalSince(before)
        #expect(gone != nil, "exp/a still readable \(Poll.patience) s after ttl=1")
        #expect(elapsed >= 0.9, "exp/a vanished after \(elapsed) s, before its ttl of 1 s")
        S.expectError(try client.get("exp/a"), status: 404, code: "not_found")
        #expect(try client.head("exp/a").status == 404)
        #expect(try Self.listed(client, "exp/", "exp/a") == nil, "an expired key is still listed")
        #expect(try S.listAll(client).keys == ["exp/stay"])
        #expect(try client.get("exp/stay").text == "no ttl")
    }

    @Test func expiredKeyFailsIfMatchAndPassesIfNoneMatchStar() throws {
        let server = try TestServer()
        let client = server.client()
        let put = try client.send("PUT", "/store/cond/k?ttl=1", body: Array("old".utf8))
        #expect(put.status == 201)
        let oldTag = try #require(put.header("ETag"))
        #expect(Poll.elapsed(within: Poll.patience, every: 0.02) { (try? client.get("cond/k").status) == 404 } != nil, "cond/k never expired")

        // If-Match the expired version: the key is absent, so 412 and nothing written.
        let ifMatch = try client.send("PUT", "/store/cond/k", headers: [("If-Match", oldTag)], body: Array("cas".utf8))
        S.expectError(ifMatch, status: 412, code: "precondition_failed")
        #expect(try client.get("cond/k").status == 404, "a failed If-Match wrote the value")
        let deleteIfMatch = try client.send("DELETE", "/store/cond/k", headers: [("If-Match", oldTag)])
        #expect(deleteIfMatch.status == 412, "DELETE If-Match on an expired key: \(deleteIfMatch.status)")

        // Create-only succeeds on an expired key.
        let create = try client.send("PUT", "/store/cond/k", headers: [("If-None-Match", "*")], body: Array("new".utf8))
        #expect(create.status != 412, "If-None-Match: * on an expired key answered 412")
        #expect(create.status == 201 || create.status == 204, "If-None-Match: * on an expired key: \(create.status) \(create.text)")
        #expect(create.header("Larder-Expires") == nil)
        let get = try client.get("cond/k")
        #expect(get.status == 200)
        #expect(get.text == "new")
        #expect(get.header("ETag") == create.header("ETag"))
        #expect(get.header("ETag") != oldTag)
        #expect(get.header("Larder-Expires") == nil, "the new value inherited the old expiry")
        // Now it exists: create-only fails.
        let again = try client.send("PUT", "/store/cond/k", headers: [("If-None-Match", "*")], body: Array("x".utf8))
        #expect(again.status == 412)
    }

    @Test(.diskStoreOnly("looks for the value files")) func sweepRemovesTheValueFile() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.put("sweep/keep", "stays").status == 201)
        let start = Date()
        #expect(try client.send("PUT", "/store/sweep/gone?ttl=1", body: Array("swept".utf8)).status == 201)
        #expect(try client.send("PUT", "/store/sweep/deep/gone?ttl=1", body: Array("swept".utf8)).status == 201)
        #expect(Self.valueFileExists(server.dataDirectory, "sweep/gone"),
                "no value file for sweep/gone: \(S.valueFiles(server.dataDirectory))")
        #expect(Self.valueFileExists(server.dataDirectory, "sweep/deep/gone"))

        let removed = Poll.elapsed(within: Poll.patience, every: 0.02) {
            !Self.valueFileExists(server.dataDirectory, "sweep/gone") && !Self.valueFileExists(server.dataDirectory, "sweep/deep/gone")
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(removed != nil, "the sweep left \(S.valueFiles(server.dataDirectory)) \(Poll.patience) s after ttl=1")
        #expect(elapsed >= 0.9, "the files went after \(elapsed) s, before the ttl")
        #expect(S.valueFiles(server.dataDirectory) == [S.diskPath("sweep/keep")], "\(S.valueFiles(server.dataDirectory))")
        #expect(try client.get("sweep/keep").text == "stays")
        #expect(try client.get("sweep/gone").status == 404)
        #expect(try S.listAll(client).keys == ["sweep/keep"])
    }

    @Test func expiryAndSweepSurviveARestart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let arguments = ["--no-fsync", "--log-level", "warning"]
        let first = try ChildServer(dataDirectory: dir, arguments: arguments)
        let putAt = Date()
        let put = try first.client().send("PUT", "/store/restart/ttl?ttl=2", body: Array("until restart".utf8))
        #expect(put.status == 201)
        #expect(Self.httpDate(put.header("Larder-Expires")) != nil)
        #expect(try first.client().put("restart/keep", "kept").status == 201)
        #expect(Self.valueFileExists(dir, "restart/ttl"))
        first.kill(SIGTERM)
        #expect(first.waitForExit() == 0, "larder did not exit cleanly on SIGTERM: \(first.log)")

        let second = try ChildServer(dataDirectory: dir, arguments: arguments)
        let client = second.client()
        let get = try client.get("restart/ttl")
        if Date().timeIntervalSince(putAt) < 1.7 {
            // Still before its deadline: the value and its expiry came back.
            #expect(get.status == 200, "restart/ttl lost before its deadline: \(get.status)")
            #expect(get.header("Larder-Expires") == put.header("Larder-Expires"))
        }
        let absent = Poll.elapsed(within: Poll.patience, every: 0.02) { (try? client.get("restart/ttl").status) == 404 }
        #expect(absent != nil, "restart/ttl still readable after restart, \(Date().timeIntervalSince(putAt)) s after ttl=2")
        #expect(Date().timeIntervalSince(putAt) >= 1.9, "restart/ttl vanished before its ttl")
        #expect(try Self.listed(client, "restart/", "restart/ttl") == nil)

        // The restarted server found the TTL'd file and swept it.
        let swept = Poll.elapsed(within: Poll.patience, every: 0.02) { !Self.valueFileExists(dir, "restart/ttl") }
        #expect(swept != nil, "the file of restart/ttl was not swept after a restart: \(S.valueFiles(dir))")
        #expect(Self.valueFileExists(dir, "restart/keep"))
        #expect(try client.get("restart/keep").text == "kept")
        second.kill(SIGTERM)
        _ = second.waitForExit()
    }

    @Test(arguments: ["0", "abc", "-1", "1.5", ""])
    func invalidTTLIsRejected(ttl: String) throws {
        let server = try TestServer()
        let client = server.client()
        let put = try client.send("PUT", "/store/bad/ttl?ttl=\(ttl)", body: Array("v".utf8))
        S.expectError(put, status: 400, code: "invalid_argument")
        #expect(try client.get("bad/ttl").status == 404, "ttl=\(ttl) was rejected but the value was stored")
        let create = try client.send("POST", "/store/bad/?ttl=\(ttl)", body: Array("v".utf8))
        S.expectError(create, status: 400, code: "invalid_argument")
        #expect(try S.listAll(client).keys.isEmpty)
    }

    @Test(.diskStoreOnly("looks for the value file")) func rewriteWithoutTTLClearsTheExpiry() throws {
        let server = try TestServer()
        let client = server.client()
        let start = Date()
        #expect(try client.send("PUT", "/store/rewrite/k?ttl=1", body: Array("temporary".utf8)).status == 201)
        #expect(try client.get("rewrite/k").header("Larder-Expires") != nil)
        let rewrite = try client.put("rewrite/k", "permanent")
        #expect(rewrite.status == 204)
        #expect(rewrite.header("Larder-Expires") == nil, "a rewrite without ttl still announces an expiry")
        #expect(try client.get("rewrite/k").header("Larder-Expires") == nil)
        #expect(try Self.listed(client, "rewrite/", "rewrite/k")?["expires"] is NSNull)

        // Past the old deadline and past the sweep's pass for it.
        let wait = 2.2 - Date().timeIntervalSince(start)
        if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
        let get = try client.get("rewrite/k")
        #expect(get.status == 200, "the rewritten value expired with the old ttl")
        #expect(get.text == "permanent")
        #expect(Self.valueFileExists(server.dataDirectory, "rewrite/k"), "the sweep removed a value that no longer expires")
        #expect(try S.listAll(client).keys == ["rewrite/k"])
    }

    @Test func ttlWorksOnGeneratedKeys() throws {
        let server = try TestServer()
        let client = server.client()
        let create = try client.send("POST", "/store/gen/?ttl=1", body: Array("generated".utf8))
        #expect(create.status == 201)
        #expect(Self.httpDate(create.header("Larder-Expires")) != nil)
        let key = try #require(create.json?["key"] as? String)
        #expect(try client.get(key).status == 200)
        #expect(Poll.elapsed(within: Poll.patience, every: 0.02) { (try? client.get(key).status) == 404 } != nil, "\(key) did not expire")
    }

    /// A snapshot line may carry any `expires` (a PUT's `?ttl` is held to
    /// 100 years): one at the end of the 64-bit nanosecond range crashed the
    /// server, in the ISO 8601 parser (adding the fraction overflowed) or
    /// at the next GET of the key (rounding the `Larder-Expires` date up
    /// overflowed).
    @Test func anExpiryAtTheEndOfTheRangeDoesNotCrashTheServer() throws {
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--no-fsync", "--log-level", "error"])
        defer { child.kill(SIGKILL); _ = child.waitForExit() }
        let client = child.client()
        // 2262-04-11T23:47:16Z is the last whole second of Int64 nanoseconds.
        let past = try client.send("POST", "/snapshot",
                                   body: Array(#"{"key":"over","expires":"2262-04-11T23:47:16.999999999Z","text":"v"}"#.utf8))
        ProtocolWire.expectError(past, 400, "invalid_snapshot")
        let restored = try client.send("POST", "/snapshot",
                                       body: Array(#"{"key":"last","expires":"2262-04-11T23:47:16.5Z","text":"v"}"#.utf8))
        #expect(restored.status == 200, "\(restored.status) \(restored.text)")
        let value = try client.get("last")
        #expect(value.status == 200)
        #expect(value.header("Larder-Expires") == "Fri, 11 Apr 2262 23:47:17 GMT")
        #expect(try client.send("GET", "/store/").status == 200)
        #expect(try client.send("GET", "/snapshot").status == 200)
    }
}
