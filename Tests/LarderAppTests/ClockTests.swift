import Foundation
import LarderModel
import LarderTestSupport
import LarderWire
import Testing

/// `/clock`: each namespace's clock, which a test moves instead of
/// sleeping. Expiry (with its `expire` events), `Last-Modified` and the
/// journal's times read it; the system clock is untouched.
@Suite(.blockingLane) struct ClockTests {
    static func state(_ client: WireClient, _ base: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws -> ClockState {
        let response = try client.send("GET", base + "/clock")
        #expect(response.status == 200, "\(response.status) \(response.text)", sourceLocation: sourceLocation)
        return try JSONDecoder().decode(ClockState.self, from: Data(response.body))
    }

    static func move(_ client: WireClient, _ body: String, _ base: String = "",
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> ClockState {
        let response = try client.send("POST", base + "/clock", headers: [("Content-Type", "application/json")],
                                       body: Array(body.utf8))
        #expect(response.status == 200, "\(body): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        return try JSONDecoder().decode(ClockState.self, from: Data(response.body))
    }

    static func seconds(_ iso: String) throws -> Double {
        Double(try #require(ISO8601.parse(iso), "\(iso)")) / 1e9
    }

    @Test func itRunsWithTheSystemClockUntilMovedAndBackAfterDelete() throws {
        let server = try TestServer()
        let client = server.client()
        let start = try Self.state(client)
        #expect(start.offsetMs == 0 && !start.frozen)
        #expect(abs(try Self.seconds(start.now) - Date().timeIntervalSince1970) < 5)
        let moved = try Self.move(client, #"{"advance":"2h"}"#)
        #expect(moved.offsetMs >= 7_200_000 && moved.offsetMs < 7_200_000 + 5_000 && !moved.frozen)
        #expect(try Self.seconds(moved.now) - Date().timeIntervalSince1970 > 7_195)
        // Milliseconds as a number, and units that add up.
        #expect(try Self.move(client, #"{"advance":1500}"#).offsetMs >= 7_201_500)
        #expect(try Self.move(client, #"{"advance":"1h30m"}"#).offsetMs >= 12_601_500)
        let reset = try client.send("DELETE", "/clock")
        #expect(reset.status == 200)
        let back = try Self.state(client)
        #expect(back.offsetMs == 0 && !back.frozen)
    }

    @Test func anAdvancePastATTLExpiresTheKeyAtOnceWithItsEvent() throws {
        let server = try TestServer()
        let client = server.client()
        let reader = try SSEClient(port: server.port, target: "/events?prefix=session/")
        #expect(try reader.readHead() == 200)
        #expect(try client.send("PUT", "/store/session/a?ttl=1800", body: Array("a".utf8)).status == 201)
        #expect(try client.send("PUT", "/store/session/b?ttl=3600", body: Array("b".utf8)).status == 201)
        #expect(try client.put("session/keep", "k").status == 201)
        _ = try Self.move(client, #"{"advance":"31m"}"#)
        // Gone by the answer: no sleep, no poll.
        #expect(try client.get("session/a").status == 404)
        #expect(try client.get("session/b").status == 200)
        let listing = try #require(try client.send("GET", "/store/session/").json)
        let keys = ((listing["keys"] as? [[String: Any]]) ?? []).compactMap { $0["key"] as? String }
        #expect(keys == ["session/b", "session/keep"])
        _ = try Self.move(client, #"{"advance":"1h"}"#)
        #expect(try client.get("session/b").status == 404)
        let events = try reader.events(5, timeout: 10)
        #expect(ChangeFeedTests.summary(events) == ["put session/a", "put session/b", "put session/keep",
                                                    "expire session/a", "expire session/b"], "\(events)")
        // Back on the system clock, what expired stays gone.
        #expect(try client.send("DELETE", "/clock").status == 200)
        #expect(try client.get("session/a").status == 404)
        #expect(try client.get("session/b").status == 404)
        #expect(try client.get("session/keep").status == 200)
    }

    @Test func aFrozenClockDatesWritesAndTheJournalAtItsTime() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try Self.move(client, #"{"freeze":true}"#).frozen)
        // Set while frozen: it stands exactly there.
        let frozen = try Self.move(client, #"{"set":"2030-01-02T03:04:05Z"}"#)
        #expect(frozen.now == "2030-01-02T03:04:05.000Z" && frozen.frozen)
        #expect(try client.put("doc", "v1").status == 201)
        let get = try client.get("doc")
        #expect(get.header("Last-Modified") == "Wed, 02 Jan 2030 03:04:05 GMT")
        // If-Modified-Since is judged against those times.
        let same = try client.get("doc", headers: [("If-Modified-Since", "Wed, 02 Jan 2030 03:04:05 GMT")])
        #expect(same.status == 304)
        // The clock stands still while frozen: a TTL never runs out by itself.
        #expect(try client.send("PUT", "/store/short?ttl=1", body: Array("s".utf8)).status == 201)
        usleep(1_200_000)
        #expect(try client.get("short").status == 200)
        #expect(try Self.state(client).now == "2030-01-02T03:04:05.000Z")
        _ = try Self.move(client, #"{"advance":"1s"}"#)
        #expect(try client.get("short").status == 404)
        let later = try Self.move(client, #"{"advance":"1d"}"#)
        #expect(later.now == "2030-01-03T03:04:06.000Z" && later.frozen)
        #expect(try client.put("doc", "v2").status == 204)
        let modified = try client.get("doc", headers: [("If-Modified-Since", "Wed, 02 Jan 2030 03:04:05 GMT")])
        #expect(modified.status == 200 && modified.header("Last-Modified") == "Thu, 03 Jan 2030 03:04:06 GMT")
        // The journal's entries are timed by the namespace's clock.
        let journal = try JSONDecoder().decode(JournalPage.self, from: Data(try client.send("GET", "/journal?method=PUT").body))
        #expect(journal.requests.map(\.time).allSatisfy { $0.hasPrefix("2030-01-0") }, "\(journal.requests.map(\.time))")
        // Unfrozen, it runs on from where it stood.
        let running = try Self.move(client, #"{"freeze":false}"#)
        #expect(!running.frozen && running.now.hasPrefix("2030-01-03T03:04:0"))
    }

    @Test func movesThatCannotBeAreRefusedClearly() throws {
        let server = try TestServer()
        let client = server.client()
        _ = try Self.move(client, #"{"set":"2031-06-01T00:00:00Z"}"#)
        let backwards = try client.send("POST", "/clock", body: Array(#"{"set":"2031-01-01T00:00:00Z"}"#.utf8))
        #expect(backwards.status == 400 && backwards.text.contains("clock_backwards"), "\(backwards.text)")
        #expect(try Self.state(client).now.hasPrefix("2031-06-01"))
        for body in [#"{"advance":"soon"}"#, #"{"advance":-5}"#, #"{"set":"tomorrow"}"#, #"{"freeze":"yes"}"#,
                     #"{"advance":"1h","freeze":true}"#, #"{}"#, #"[]"#] {
            let answer = try client.send("POST", "/clock", body: Array(body.utf8))
            #expect(answer.status == 400 && answer.text.contains("invalid_argument"), "\(body): \(answer.status) \(answer.text)")
        }
        let notJSON = try client.send("POST", "/clock", body: Array("advance 1h".utf8))
        #expect(notJSON.status == 400 && notJSON.text.contains("invalid_json"))
        let put = try client.send("PUT", "/clock")
        #expect(put.status == 405 && put.header("Allow") == "GET, HEAD, POST, DELETE, OPTIONS")
    }

    @Test func eachNamespaceHasItsOwnClock() throws {
        let server = try TestServer()
        let client = server.client()
        #expect(try client.send("PUT", "/ns/w1/store/t?ttl=600", body: Array("1".utf8)).status == 201)
        #expect(try client.send("PUT", "/ns/w2/store/t?ttl=600", body: Array("2".utf8)).status == 201)
        #expect(try client.send("PUT", "/store/t?ttl=600", body: Array("0".utf8)).status == 201)
        let w1 = try Self.move(client, #"{"advance":"11m"}"#, "/ns/w1")
        #expect(w1.offsetMs >= 660_000)
        #expect(try client.send("GET", "/ns/w1/store/t").status == 404)
        #expect(try client.send("GET", "/ns/w2/store/t").status == 200)
        #expect(try client.get("t").status == 200)
        #expect(try Self.state(client, "/ns/w2").offsetMs == 0)
        #expect(try Self.state(client).offsetMs == 0)
        // A reset of the namespace leaves its clock where it is.
        #expect(try client.send("DELETE", "/ns/w1/store/").status == 200)
        #expect(try Self.state(client, "/ns/w1").offsetMs >= 660_000)
    }

    @Test func withATokenTheClockNeedsIt() throws {
        let server = try TestServer { $0.token = "clock-token" }
        let client = server.client()
        #expect(try client.send("GET", "/clock").status == 401)
        #expect(try client.send("POST", "/clock", body: Array(#"{"advance":"1h"}"#.utf8)).status == 401)
        let allowed = try client.send("GET", "/clock", headers: [("Authorization", "Bearer clock-token")])
        #expect(allowed.status == 200)
    }
}
