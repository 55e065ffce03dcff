import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// Faults on purpose (`--allow-faults`): `/faults` rules that answer with an
/// error or late, by prefix and method, a number of times or with a
/// probability; delays that park the request instead of holding a thread.
@Suite(.blockingLane) struct FaultTests {
    /// How many entries `directory` holds (threads: `/proc/<pid>/task`); -1 if unreadable.
    static func entries(_ directory: String) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1
    }

    static func faultServer() throws -> TestServer { try FaultRules.server() }

    /// `PUT /faults` with `rules`; fails the test unless it is a 200.
    @discardableResult
    static func setRules(_ client: WireClient, _ rules: String,
                         sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
        try FaultRules.set(client, rules, sourceLocation: sourceLocation)
    }

    static func rules(_ client: WireClient) throws -> [[String: Any]] { try FaultRules.rules(client) }

    /// A status fault: the rule's status, the `fault_injected` body naming
    /// the rule, and `Larder-Fault`.
    static func expectFault(_ response: ClientResponse, _ status: Int, rule: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        ProtocolWire.expectError(response, status, "fault_injected", sourceLocation: sourceLocation)
        #expect(response.header("Larder-Fault") == rule, "Larder-Fault: \(response.header("Larder-Fault") ?? "none")",
                sourceLocation: sourceLocation)
        #expect((response.json?["message"] as? String)?.contains("rule \(rule)") == true, "\(response.text)",
                sourceLocation: sourceLocation)
    }

    static func expectUntouched(_ response: ClientResponse, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        FaultRules.expectUntouched(response, status, sourceLocation: sourceLocation)
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    // MARK: - The switch

    @Test func withoutTheFlagFaultsIsNotAnEndpoint() throws {
        let server = try TestServer()
        let client = server.client()
        for method in ["GET", "DELETE", "POST"] {
            let answer = try client.send(method, "/faults")
            S.expectError(answer, status: 404, code: "not_found")
            // The 404 says how to turn faults on, at the top level and in a namespace.
            #expect(answer.text.contains("--allow-faults"), "\(answer.text)")
            #expect(try client.send(method, "/ns/some-team/faults").text.contains("--allow-faults"))
        }
        let put = try client.send("PUT", "/faults", body: Array(#"[{"prefix":"","status":503}]"#.utf8))
        S.expectError(put, status: 404, code: "not_found")
        // Nothing was installed: requests are untouched.
        Self.expectUntouched(try client.put("k", "v"), 201)
        Self.expectUntouched(try client.get("k"), 200)
    }

    // MARK: - Matching

    @Test func rulesMatchByKeyPrefixAndMethod() throws {
        let server = try Self.faultServer()
        let client = server.client()
        Self.expectUntouched(try client.put("users/1", "ada"), 201)
        Self.expectUntouched(try client.put("other/1", "x"), 201)
        let installed = try Self.setRules(client, #"[{"prefix":"users/","methods":["GET"],"status":503}]"#)
        #expect(installed.count == 1)
        #expect(installed.first?["id"] as? String == "rule-1")

        Self.expectFault(try client.get("users/1"), 503, rule: "rule-1")
        Self.expectFault(try client.get("users/missing"), 503, rule: "rule-1")
        Self.expectFault(try client.send("GET", "/store/users%2F1"), 503, rule: "rule-1")  // the decoded key
        Self.expectFault(try client.send("GET", "/store/users/"), 503, rule: "rule-1")    // a listing under it
        // Other methods, other prefixes, and keys that only look alike are untouched.
        Self.expectUntouched(try client.put("users/1", "grace"), 204)
        Self.expectUntouched(try client.head("users/1"), 200)
        Self.expectUntouched(try client.get("other/1"), 200)
        Self.expectUntouched(try client.get("users"), 404)
        Self.expectUntouched(try client.send("GET", "/store/"), 200)
        Self.expectUntouched(try client.send("GET", "/healthz"), 200)
        #expect(try client.send("DELETE", "/faults").status == 200)
        #expect(try client.get("users/1").text == "grace", "the PUT that was not faulted was stored")
    }

    @Test func aPathPrefixMatchesAnyEndpointButFaultsItself() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try Self.setRules(client, #"[{"prefix":"/healthz","status":500},{"id":"all","prefix":"/","methods":["delete"],"status":502}]"#)
        Self.expectFault(try client.send("GET", "/healthz"), 500, rule: "rule-1")
        Self.expectFault(try client.send("DELETE", "/store/anything"), 502, rule: "all")
        Self.expectFault(try client.send("DELETE", "/nowhere"), 502, rule: "all")
        Self.expectUntouched(try client.get("anything"), 404)
        // `/faults` is never faulted, or a rule could lock its own switch.
        Self.expectUntouched(try client.send("GET", "/faults"), 200)
        let cleared = try client.send("DELETE", "/faults")
        Self.expectUntouched(cleared, 200)
        #expect(cleared.json?["deleted"] as? Int == 2)
        Self.expectUntouched(try client.send("GET", "/healthz"), 200)
    }

    @Test func theFirstRuleThatFiresApplies() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try Self.setRules(client, #"""
            [{"id":"never","prefix":"a/","status":500,"probability":0},
             {"id":"twice","prefix":"a/","status":503,"count":2},
             {"id":"then","prefix":"a/","status":429}]
            """#)
        Self.expectFault(try client.get("a/x"), 503, rule: "twice")
        Self.expectFault(try client.get("a/x"), 503, rule: "twice")
        Self.expectFault(try client.get("a/x"), 429, rule: "then")
        let rules = try Self.rules(client)
        #expect(rules.map { $0["matched"] as? Int } == [3, 2, 1])
        #expect(rules.map { $0["fired"] as? Int } == [0, 2, 1])
    }

    // MARK: - How often

    @Test func countRunsOut() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try Self.setRules(client, #"[{"prefix":"c/","status":503,"count":3}]"#)
        #expect(try Self.rules(client).first?["remaining"] as? Int == 3)
        for _ in 0..<3 { Self.expectFault(try client.get("c/k"), 503, rule: "rule-1") }
        for _ in 0..<5 { Self.expectUntouched(try client.get("c/k"), 404) }
        let rule = try #require(try Self.rules(client).first)
        #expect(rule["count"] as? Int == 3)
        #expect(rule["remaining"] as? Int == 0)
        #expect(rule["fired"] as? Int == 3)
        #expect(rule["matched"] as? Int == 3, "a rule with no count left is not tried")
    }

    @Test func countIsExactUnderConcurrency() throws {
        let server = try Self.faultServer()
        try Self.setRules(server.client(), #"[{"prefix":"race/","status":503,"count":25}]"#)
        let faulted = StatusCounter()
        let port = server.port
        let errors = S.onThreads(8) { _ in
            let client = WireClient(port: port)
            for _ in 0..<20 { faulted.add(try client.get("race/k").status) }
        }
        #expect(errors.isEmpty, "\(errors)")
        #expect(faulted.all == [503: 25, 404: 135], "\(faulted.all)")
    }

    @Test func probabilityZeroNeverOneAlwaysAndAHalfAboutHalf() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try Self.setRules(client, #"""
            [{"prefix":"never/","status":503,"probability":0},
             {"prefix":"always/","status":503,"probability":1},
             {"prefix":"half/","status":503,"probability":0.5}]
            """#)
        for _ in 0..<100 {
            Self.expectUntouched(try client.get("never/k"), 404)
            Self.expectFault(try client.get("always/k"), 503, rule: "rule-2")
        }
        var faulted = 0
        for _ in 0..<400 { if try client.get("half/k").status == 503 { faulted += 1 } }
        // Binomial(400, 0.5): mean 200, standard deviation 10; this band is ±6 of them.
        #expect((140...260).contains(faulted), "\(faulted) of 400 faulted at probability 0.5")
        let rules = try Self.rules(client)
        #expect(rules.map { $0["matched"] as? Int } == [100, 100, 400])
        #expect(rules.map { $0["fired"] as? Int } == [0, 100, faulted])
    }

    @Test func aSeedRepeatsTheDraws() throws {
        let server = try Self.faultServer()
        let client = server.client()
        func run() throws -> [Int] {
            try Self.setRules(client, #"{"seed":42,"rules":[{"prefix":"s/","status":503,"probability":0.3,"delayMs":1,"jitterMs":5}]}"#)
            return try (0..<60).map { _ in try client.get("s/k").status }
        }
        let first = try run()
        #expect(first.contains(503) && first.contains(404), "\(first)")
        #expect(try run() == first, "the same seed drew differently")
        #expect(try Self.rules(client).count == 1)
        #expect(try client.send("GET", "/faults").json?["seed"] as? Int == 42)
    }

    // MARK: - What a fault does

    @Test(.diskStoreOnly("lists the value files")) func statusFaultsWriteNothing() throws {
        let server = try Self.faultServer()
        let client = server.client()
        let original = try client.put("w/kept", "original")
        let etag = original.header("ETag")
        try Self.setRules(client, #"[{"id":"no-writes","prefix":"w/","methods":["PUT","POST","PATCH","DELETE"],"status":503}]"#)

        Self.expectFault(try client.put("w/new", "never"), 503, rule: "no-writes")
        Self.expectFault(try client.put("w/kept", "overwritten"), 503, rule: "no-writes")
        Self.expectFault(try client.send("POST", "/store/w/kept", body: Array("[1]".utf8)), 503, rule: "no-writes")
        Self.expectFault(try client.send("PATCH", "/store/w/kept", headers: [("Content-Type", "application/json")],
                                         body: Array("{}".utf8)), 503, rule: "no-writes")
        Self.expectFault(try client.send("POST", "/store/w/", body: Array("generated".utf8)), 503, rule: "no-writes")
        Self.expectFault(try client.delete("w/kept"), 503, rule: "no-writes")
        Self.expectFault(try client.deletePrefix("w/"), 503, rule: "no-writes")
        let chunked = try client.send("PUT", "/store/w/chunked", headers: [("Transfer-Encoding", "chunked")],
                                      body: Array("5\r\nhello\r\n0\r\n\r\n".utf8))
        Self.expectFault(chunked, 503, rule: "no-writes")

        // Expect: 100-continue: the fault at once, never a 100 first, and the body is not read.
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/w/continue HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let early = try connection.readResponse(skipInterim: false)
        Self.expectFault(early, 503, rule: "no-writes")

        let get = try client.get("w/kept")
        Self.expectUntouched(get, 200)
        #expect(get.text == "original")
        #expect(get.header("ETag") == etag)
        #expect(try S.listAll(client, prefix: "w/").keys == ["w/kept"])
        #expect(S.valueFiles(server.dataDirectory) == [S.diskPath("w/kept")])
    }

    @Test func aDelayedAnswerComesLateAndWhole() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try Self.setRules(client, #"""
            [{"id":"slow-read","prefix":"slow/","methods":["GET"],"delayMs":300},
             {"id":"slow-write","prefix":"slow/","methods":["PUT"],"delayMs":300}]
            """#)
        var put: ClientResponse?
        let putTime = try Self.seconds { put = try client.put("slow/a", "value") }
        #expect(putTime >= 0.3, "delayed PUT answered after \(putTime) s")
        #expect(put?.status == 201)
        #expect(put?.header("ETag") != nil, "the route's own answer, headers and all")
        #expect(put?.header("Larder-Fault") == "slow-write")

        var get: ClientResponse?
        let getTime = try Self.seconds { get = try client.get("slow/a") }
        #expect(getTime >= 0.3, "delayed GET answered after \(getTime) s")
        #expect(get?.status == 200)
        #expect(get?.text == "value")
        #expect(get?.header("Larder-Fault") == "slow-read")
        // A large value streamed from its file, late.
        let big = Bytes.random(count: 3 << 20, seed: 7)
        #expect(try server.client().put("big/v", big).status == 201)
        try Self.setRules(client, #"[{"prefix":"big/","delayMs":250}]"#)
        var large: ClientResponse?
        let largeTime = try Self.seconds { large = try client.get("big/v") }
        #expect(largeTime >= 0.25)
        #expect(large.map { S.same($0.body, big) } == true, "the delayed 3 MiB body differs")

        try Self.setRules(client, #"[{"id":"slow-error","prefix":"err/","delayMs":200,"status":504},{"id":"jittery","prefix":"jit/","delayMs":100,"jitterMs":200}]"#)
        var error: ClientResponse?
        let errorTime = try Self.seconds { error = try client.get("err/x") }
        #expect(errorTime >= 0.2)
        if let error { Self.expectFault(error, 504, rule: "slow-error") }
        for _ in 0..<5 {
            var marked: String?
            let t = try Self.seconds { marked = try client.get("jit/x").header("Larder-Fault") }
            #expect(marked == "jittery")
            #expect(t >= 0.1 && t < 2, "delayMs 100 + jitterMs 200 took \(t) s")
        }
    }

    /// Answers that come later anyway are held too: a watch's change or
    /// deadline answer, and the head of an event stream, whose events
    /// published meanwhile are not lost.
    @Test func answersGivenLaterAreHeldToo() throws {
        let server = try Self.faultServer()
        let client = server.client()
        let etag = try #require(try client.put("watched/k", "v1").header("ETag"))
        try Self.setRules(client, #"[{"id":"late","prefix":"watched/","methods":["GET"],"delayMs":400},{"id":"late-feed","prefix":"/events","delayMs":400}]"#)

        var timedOut: ClientResponse?
        let deadlineTime = try Self.seconds {
            timedOut = try server.client().send("GET", "/store/watched/k?wait=1", headers: [("If-None-Match", etag)])
        }
        #expect(timedOut?.status == 304)
        #expect(timedOut?.header("Larder-Fault") == "late")
        #expect(deadlineTime >= 1.4, "a watch's deadline answer delayed 0.4 s came after \(deadlineTime) s")

        let port = server.port
        let watcher = Background { () -> (ClientResponse, UInt64) in
            let connection = try HTTPClientConnection(port: port, timeout: 15)
            let response = try connection.request("GET", "/store/watched/k?wait=10", headers: [("If-None-Match", etag)])
            return (response, DispatchTime.now().uptimeNanoseconds)
        }
        #expect(WatchTests.waitForWatchers(server, 1))
        let stream = try SSEClient(port: port, target: "/events?prefix=watched/")
        // Subscribed (its head is what the fault holds), not merely sent: a
        // sleep here lost the change on a loaded machine.
        try Poll.until(10, "the event stream's subscription") { server.server.eventStreamCount == 1 }
        let changed = DispatchTime.now().uptimeNanoseconds
        #expect(try client.put("watched/k", "v2").status == 204)
        let (woken, at) = try watcher.wait()
        #expect(woken.status == 200)
        #expect(woken.text == "v2")
        #expect(woken.header("Larder-Fault") == "late")
        #expect(at - changed >= 400_000_000, "the watch's answer came \(Double(at - changed) / 1e9) s after the change")

        #expect(try stream.readHead() == 200)
        #expect(stream.header("Larder-Fault") == "late-feed")
        let event = try stream.nextEvent()
        #expect(event?.event == "put")
        #expect(event?.json?["key"] as? String == "watched/k", "the change made while the stream's head was held is lost")
    }

    /// Delays park requests: many delayed requests wait side by side, and
    /// a request that is not delayed is answered at once meanwhile: while
    /// every delayed one is still parked. (Each bound below is half of what
    /// the requests would take one after another, the failure it tells apart.)
    @Test func delaysDoNotBlockOtherClients() throws {
        let delay = 5.0
        let server = try Self.faultServer()
        try Self.setRules(server.client(), #"[{"prefix":"slow/","delayMs":\#(Int(delay * 1000))}]"#)
        let connections = try (0..<50).map { _ in try server.connection(timeout: 60) }
        let start = DispatchTime.now().uptimeNanoseconds
        for (i, c) in connections.enumerated() { try c.send("GET /store/slow/\(i) HTTP/1.1\r\nHost: x\r\n\r\n") }
        Self.expectUntouched(try server.client().put("fast/k", "v"), 201)
        Self.expectUntouched(try server.client().get("fast/k"), 200)
        let parked = connections.filter { ProtocolWire.staysOpen($0, for: 0) }.count
        #expect(parked == connections.count, "only \(parked) of 50 delayed requests were still parked when the undelayed PUT and GET were answered")
        for c in connections {
            let response = try c.readResponse()
            #expect(response.status == 404)
            #expect(response.header("Larder-Fault") == "rule-1")
        }
        let total = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        #expect(total >= delay && total < 25 * delay, "50 requests delayed \(delay) s in parallel took \(total) s")
        // The connections go on: a second request on each is delayed again, together.
        let again = try Self.seconds {
            for c in connections.prefix(10) { try c.send("GET /store/slow/x HTTP/1.1\r\nHost: x\r\n\r\n") }
            for c in connections.prefix(10) { #expect(try c.readResponse().status == 404) }
        }
        #expect(again >= delay && again < 5 * delay, "10 delayed requests took \(again) s")
    }

    /// A client that hangs up during a delay: the held answer is dropped, the
    /// connection is gone, and nothing else notices.
    @Test func aClientHangingUpDuringADelayLeavesNothingBehind() throws {
        let server = try Self.faultServer()
        #expect(try server.client().put("big/v", Bytes.random(count: 1 << 20, seed: 3)).status == 201)
        try Self.setRules(server.client(), #"[{"prefix":"big/","delayMs":400},{"prefix":"err/","delayMs":400,"status":503}]"#)
        let before = server.server.http.connectionCount
        for target in ["/store/big/v", "/store/err/x"] {
            let c = try server.connection(timeout: 5)
            try c.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            usleep(100_000)
            c.close()
        }
        let deadline = Date().addingTimeInterval(3)
        while server.server.http.connectionCount > before && Date() < deadline { usleep(10_000) }
        #expect(server.server.http.connectionCount <= before, "a hung-up delayed request kept its connection")
        usleep(500_000)  // past the delays: the timers find nothing to send
        #expect(try server.client().get("big/v").body.count == 1 << 20)
    }

    /// Requests held by a delay do not hold up a graceful stop: they are
    /// parked, so the stop closes them at once.
    @Test func heldAnswersDoNotDelayShutdown() throws {
        let server = try Self.faultServer()
        try Self.setRules(server.client(), #"[{"prefix":"slow/","delayMs":10000}]"#)
        let connections = try (0..<5).map { _ in try server.connection(timeout: 5) }
        for c in connections { try c.send("GET /store/slow/k HTTP/1.1\r\nHost: x\r\n\r\n") }
        let deadline = Date().addingTimeInterval(3)
        while (try Self.rules(server.client()).first?["fired"] as? Int ?? 0) < 5 && Date() < deadline { usleep(10_000) }
        let stop = Self.seconds { server.stop() }
        #expect(stop < 1, "shutdown took \(stop) s with 5 delayed requests")
        for c in connections { #expect(ProtocolWire.closedByServer(c)) }
    }

    // MARK: - The /faults endpoint

    @Test func getShowsTheRulesAndPostAppends() throws {
        let server = try Self.faultServer()
        let client = server.client()
        #expect(try client.send("GET", "/faults").text == #"{"rules":[],"seed":null}"#)
        let put = try client.send("PUT", "/faults", body: Array(#"[{"prefix":"users/","methods":["GET","get","HEAD"],"delayMs":200,"jitterMs":50,"status":503,"probability":0.1,"count":5}]"#.utf8))
        #expect(put.status == 200)
        #expect(put.header("Content-Type") == "application/json")
        let expected = #"{"rules":[{"id":"rule-1","prefix":"users/","methods":["GET","HEAD"],"delayMs":200,"jitterMs":50,"status":503,"drop":null,"truncate":null,"bytesPerSecond":null,"probability":0.1,"count":5,"remaining":5,"matched":0,"fired":0}],"seed":null}"#
        #expect(put.text == expected)
        #expect(try client.send("GET", "/faults").text == expected)

        let post = try client.send("POST", "/faults", body: Array(#"{"prefix":"/events"}"#.utf8))
        #expect(post.status == 200)
        let posted = try client.send("POST", "/faults", body: Array(#"[{"id":"mine","prefix":"a"},{"prefix":"b"}]"#.utf8))
        #expect(posted.status == 200)
        let rules = try Self.rules(client)
        #expect(rules.map { $0["id"] as? String } == ["rule-1", "rule-2", "mine", "rule-4"])
        #expect(rules[1]["methods"] is NSNull)
        #expect(rules[1]["status"] is NSNull)
        #expect(rules[1]["remaining"] is NSNull)
        #expect(rules[1]["probability"] as? Double == 1)
        // A rule with neither delay nor status only marks the answer.
        let marked = try client.send("GET", "/store/a-key")
        Self.expectUntouched(try client.send("GET", "/store/zzz"), 404)
        #expect(marked.status == 404)
        #expect(marked.header("Larder-Fault") == "mine")
        // Names must stay unique.
        S.expectError(try client.send("POST", "/faults", body: Array(#"{"id":"mine","prefix":"c"}"#.utf8)), status: 400, code: "invalid_rule")
        S.expectError(try client.send("PUT", "/faults", body: Array(#"[{"prefix":"x"},{"id":"rule-1","prefix":"y"}]"#.utf8)), status: 400, code: "invalid_rule")
        #expect(try Self.rules(client).count == 4, "a refused POST or PUT changed the rules")

        let options = try client.send("OPTIONS", "/faults")
        #expect(options.status == 204)
        #expect(options.header("Allow") == "GET, HEAD, PUT, POST, DELETE, OPTIONS")
        let patch = try client.send("PATCH", "/faults", body: Array("{}".utf8))
        S.expectError(patch, status: 405, code: "method_not_allowed")
        let deleted = try client.send("DELETE", "/faults")
        #expect(deleted.json?["deleted"] as? Int == 4)
        #expect(try Self.rules(client).isEmpty)
        #expect(try client.send("DELETE", "/faults").json?["deleted"] as? Int == 0)
    }

    @Test func invalidRulesAreRefusedAndChangeNothing() throws {
        let server = try Self.faultServer()
        let client = server.client()
        try Self.setRules(client, #"[{"id":"keep","prefix":"k/","status":503}]"#)
        let invalid: [(String, String)] = [
            (#"[{"prefix":"a","delay":5}]"#, "unknown field \"delay\""),
            (#"[{"methods":["GET"]}]"#, "prefix is required"),
            (#"[{"prefix":7}]"#, "prefix must be a string"),
            (#"[{"prefix":"a","delayMs":-1}]"#, "delayMs"),
            (#"[{"prefix":"a","delayMs":600001}]"#, "delayMs"),
            (#"[{"prefix":"a","delayMs":1.5}]"#, "delayMs"),
            (#"[{"prefix":"a","jitterMs":"5"}]"#, "jitterMs"),
            (#"[{"prefix":"a","status":200}]"#, "status"),
            (#"[{"prefix":"a","status":600}]"#, "status"),
            (#"[{"prefix":"a","probability":1.5}]"#, "probability"),
            (#"[{"prefix":"a","probability":-0.1}]"#, "probability"),
            (#"[{"prefix":"a","count":0}]"#, "count"),
            (#"[{"prefix":"a","methods":["FETCH"]}]"#, "methods"),
            (#"[{"prefix":"a","methods":[]}]"#, "methods"),
            (#"[{"prefix":"a","methods":"GET"}]"#, "methods"),
            (#"[{"prefix":"a","id":"has space"}]"#, "id"),
            (#"[{"prefix":"a","id":""}]"#, "id"),
            (#"[{"prefix":"a"},{"prefix":"b","bogus":true}]"#, "rule 2"),
            (#"[{"prefix":"a"},{"prefix":"b"},{"prefix":"c"}"#, "not JSON"),
            (#"["a"]"#, "a rule is a JSON object"),
            (#"{"prefix":"a"}"#, "unknown field \"prefix\""),
            (#"{"rules":{}}"#, "rules"),
            (#"{"rules":[],"seed":-1}"#, "seed"),
            (#""rules""#, "array"),
        ]
        for (body, fragment) in invalid {
            let response = try client.send("PUT", "/faults", body: Array(body.utf8))
            #expect(response.status == 400, "\(body): \(response.status) \(response.text)")
            let code = response.json?["error"] as? String
            #expect(code == "invalid_rule" || code == "invalid_json", "\(body): \(response.text)")
            let message = response.json?["message"] as? String ?? ""
            #expect(message.contains(fragment), "\(body): the message does not say \(fragment): \(message)")
        }
        S.expectError(try client.send("PUT", "/faults", body: Array("not json".utf8)), status: 400, code: "invalid_json")
        S.expectError(try client.send("PUT", "/faults", body: []), status: 400, code: "invalid_json")
        S.expectError(try client.send("POST", "/faults", body: Array("3".utf8)), status: 400, code: "invalid_rule")
        let rules = try Self.rules(client)
        #expect(rules.map { $0["id"] as? String } == ["keep"], "a refused PUT changed the rules")
        Self.expectFault(try client.get("k/x"), 503, rule: "keep")
    }

    // MARK: - The real binary

    /// `--allow-faults` and `LARDER_ALLOW_FAULTS=1` switch it on; delays in
    /// the real process park 200 requests on the threads it had before.
    @Test func theFlagSwitchesFaultsOnAndDelaysHoldNoThread() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let off = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
            S.expectError(try off.client().send("GET", "/faults"), status: 404, code: "not_found")
            off.kill(SIGTERM)
            #expect(off.waitForExit() == 0)
        }
        do {
            let fromEnvironment = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"],
                                                  environment: ["LARDER_ALLOW_FAULTS": "1"])
            #expect(try fromEnvironment.client().send("GET", "/faults").status == 200)
            fromEnvironment.kill(SIGTERM)
            #expect(fromEnvironment.waitForExit() == 0)
        }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--allow-faults", "--no-fsync", "--log-level", "warning"])
        let pid = child.process.processIdentifier
        let client = child.client()
        try Self.setRules(client, #"[{"prefix":"parked/","delayMs":2000}]"#)
        for _ in 0..<20 { _ = try client.get("warm/up") }
        usleep(200_000)
        let threadsBefore = Self.entries("/proc/\(pid)/task")

        let connections = try (0..<200).map { _ in try HTTPClientConnection(port: child.port, timeout: 15) }
        let start = DispatchTime.now().uptimeNanoseconds
        for (i, c) in connections.enumerated() { try c.send("GET /store/parked/\(i) HTTP/1.1\r\nHost: x\r\n\r\n") }
        let deadline = Date().addingTimeInterval(5)
        while (try Self.rules(client).first?["fired"] as? Int ?? 0) < 200 && Date() < deadline { usleep(10_000) }
        #expect(try Self.rules(client).first?["fired"] as? Int == 200)
        let threadsWhileParked = Self.entries("/proc/\(pid)/task")
        #expect(threadsWhileParked <= threadsBefore + 4,
                "\(threadsBefore) threads before, \(threadsWhileParked) while 200 requests are delayed")
        Self.expectUntouched(try client.get("warm/up"), 404)
        for c in connections {
            let response = try c.readResponse()
            #expect(response.status == 404 && response.header("Larder-Fault") == "rule-1")
        }
        let total = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        #expect(total >= 2 && total < 4, "200 requests delayed 2 s took \(total) s")
        child.kill(SIGTERM)
        #expect(child.waitForExit() == 0)
    }
}
