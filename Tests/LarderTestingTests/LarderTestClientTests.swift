import Foundation
import LarderTestSupport
import LarderTesting
import Testing

/// The in-process tester: every way an answer can come (returned, later
/// from another thread, at a deadline, after a body), through the real
/// routes, middleware, store and namespaces, with no socket.
@Suite(.asyncLane) struct LarderTestClientTests {
    @Test func aValueIsStoredAndReadBack() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        let put = await larder.execute("PUT", "/store/a", headers: [("Content-Type", "text/plain")], body: Array("hi".utf8))
        #expect(put.status == 201)
        let got = await larder.execute("GET", "/store/a")
        #expect(got.status == 200)
        #expect(got.text == "hi")
        #expect(got.header("content-type") == "text/plain")
        #expect(got.header("ETag") != nil)
    }

    /// docs/swift-api.md, "Route-level tests in process", as written there.
    @Test func theSwiftAPIGuidesExample() async throws {
        let larder = try LarderTestClient(.init(token: "s3cret"))
        defer { larder.shutdown() }
        let put = await larder.execute("PUT", "/store/a", headers: [("Authorization", "Bearer s3cret")],
                                       body: Array("hi".utf8))
        #expect(put.status == 201)
        #expect(await larder.execute("GET", "/store/a", headers: [("Authorization", "Bearer s3cret")]).text == "hi")
    }

    @Test func aLargeValueComesBackWhole() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        // Large enough to be read from its file (sendfile's region on a socket).
        var generator = SystemRandomNumberGenerator()
        let value = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(await larder.execute("PUT", "/store/big", body: value).status == 201)
        let got = await larder.execute("GET", "/store/big")
        #expect(got.status == 200)
        #expect(got.body == value)
    }

    @Test func anUnknownPathIsAJSONNotFound() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        let answer = await larder.execute("GET", "/nowhere")
        #expect(answer.status == 404)
        #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(answer.text.contains("\"not_found\""))
    }

    @Test func aHeadTheParserRefusesIsAnsweredAsTheConnectionWould() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        let answer = await larder.execute("GET", "/store/a b")
        #expect(answer.status == 400)
    }

    @Test func theTokenIsRequiredButNotForHealth() async throws {
        let larder = try LarderTestClient(.init(token: "s3cret"))
        defer { larder.shutdown() }
        #expect(await larder.execute("GET", "/store/a").status == 401)
        #expect(await larder.execute("GET", "/store/a", headers: [("Authorization", "Bearer s3cret")]).status == 404)
        #expect(await larder.execute("GET", "/healthz").status == 200)
    }

    @Test func aCORSPreflightIsAnsweredBeforeAuth() async throws {
        let larder = try LarderTestClient(.init(token: "s3cret", corsOrigins: ["http://app.test"]))
        defer { larder.shutdown() }
        let answer = await larder.execute("OPTIONS", "/store/a", headers: [
            ("Origin", "http://app.test"), ("Access-Control-Request-Method", "PUT"),
        ])
        #expect(answer.status == 204)
        #expect(answer.header("Access-Control-Allow-Origin") == "http://app.test")
    }

    @Test func aNamespaceIsMountedOnItsOwnStore() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        #expect(await larder.execute("PUT", "/ns/w1/store/a", body: Array("one".utf8)).status == 201)
        #expect(await larder.execute("GET", "/store/a").status == 404)
        #expect(await larder.execute("GET", "/ns/w1/store/a").text == "one")
        #expect(await larder.execute("GET", "/ns/").text.contains("\"w1\""))
    }

    @Test func theJournalIsToldOfEveryAnswer() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        _ = await larder.execute("PUT", "/store/j", body: Array("x".utf8))
        _ = await larder.execute("GET", "/store/missing")
        let journal = await larder.execute("GET", "/journal")
        #expect(journal.status == 200)
        #expect(journal.text.contains("/store/j"))
        #expect(journal.text.contains("/store/missing"))
        #expect(journal.text.contains("404"))
    }

    @Test func aWatchIsAnsweredByAWriteFromElsewhere() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        let first = await larder.execute("PUT", "/store/w", body: Array("1".utf8))
        let etag = try #require(first.header("ETag"))
        // Answered later, from the thread the store's change arrives on: the
        // watch holds no thread meanwhile, so the write below can run.
        async let watched = larder.execute("GET", "/store/w?wait=300", headers: [("If-None-Match", etag)])
        try await Poll.until("the watch is parked") { larder.server.watcherCount == 1 }
        #expect(await larder.execute("PUT", "/store/w", body: Array("2".utf8)).status == 204)
        let answer = await watched
        #expect(answer.status == 200)
        #expect(answer.text == "2")
    }

    @Test func aWatchWithNoChangeIsAnsweredAtItsDeadline() async throws {
        let larder = try LarderTestClient()
        defer { larder.shutdown() }
        let etag = try #require(await larder.execute("PUT", "/store/d", body: Array("1".utf8)).header("ETag"))
        let answer = await larder.execute("GET", "/store/d?wait=1", headers: [("If-None-Match", etag)])
        #expect(answer.status == 304)
    }

    @Test func aBodyOverTheLimitIsRefusedBeforeTheRoute() async throws {
        let larder = try LarderTestClient(.init(maxValueBytes: 1024))
        defer { larder.shutdown() }
        #expect(await larder.execute("PUT", "/store/big", body: [UInt8](repeating: 7, count: 2048)).status == 413)
        #expect(await larder.execute("GET", "/store/big").status == 404)
    }

    @Test func faultRulesAnswerAndMarkTheNetworkFault() async throws {
        let larder = try LarderTestClient(.init(allowFaults: true))
        defer { larder.shutdown() }
        let rules = #"[{"id":"down","prefix":"/store/x","status":503},{"id":"cut","prefix":"/store/y","drop":"before"}]"#
        #expect(await larder.execute("PUT", "/faults", headers: [("Content-Type", "application/json")], body: Array(rules.utf8)).status == 200)
        let failed = await larder.execute("GET", "/store/x")
        #expect(failed.status == 503)
        #expect(failed.header("Larder-Fault") == "down")
        let dropped = await larder.execute("GET", "/store/y")
        #expect(dropped.networkFault != nil)
        #expect(await larder.execute("GET", "/store/z").networkFault == nil)
    }
}
