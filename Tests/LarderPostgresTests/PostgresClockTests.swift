import Foundation
import LarderModel
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A namespace's clock on PostgreSQL lives with the namespace, in the
/// database: two `larder` processes on one schema read the same time, and
/// a move through one expires keys written through the other.
@Suite(.blockingLane, .serialized, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct PostgresClockTests {
    static func clock(_ client: WireClient, _ base: String = "") throws -> ClockState {
        let response = try client.send("GET", base + "/clock")
        guard response.status == 200 else { throw ClockError(text: "\(response.status) \(response.text)") }
        return try JSONDecoder().decode(ClockState.self, from: Data(response.body))
    }

    struct ClockError: Error { let text: String }

    @Test func aMoveThroughOneServerIsTheTimeOfBoth() throws {
        let (a, b) = try PostgresSharingTests.twoServers(on: try TestPostgres.shared())
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        let clientA = WireClient(port: a.port), clientB = WireClient(port: b.port)
        #expect(try clientB.send("PUT", "/store/sessions/s1?ttl=1800", body: Array("1".utf8)).status == 201)
        #expect(try clientB.get("sessions/s1").status == 200)
        let moved = try clientA.send("POST", "/clock", body: Array(#"{"advance":"31m"}"#.utf8))
        #expect(moved.status == 200, "\(moved.text)")
        // Gone through A by A's answer; B follows A's move when told.
        #expect(try clientA.get("sessions/s1").status == 404)
        try Poll.until(10, "server B to follow the clock") { (try? Self.clock(clientB).offsetMs) ?? 0 >= 1_860_000 }
        #expect(try clientB.get("sessions/s1").status == 404)
        // A write through B is dated by the shared clock.
        #expect(try clientB.send("POST", "/clock", body: Array(#"{"freeze":true}"#.utf8)).status == 200)
        #expect(try clientB.send("POST", "/clock", body: Array(#"{"set":"2031-02-03T04:05:06Z"}"#.utf8)).status == 200)
        try Poll.until(10, "server A to follow the frozen clock") { (try? Self.clock(clientA).now) == "2031-02-03T04:05:06.000Z" }
        #expect(try clientA.put("doc", "v").status == 201)
        #expect(try clientB.get("doc").header("Last-Modified") == "Mon, 03 Feb 2031 04:05:06 GMT")
        // A set backwards through either is refused: the state is one.
        let back = try clientA.send("POST", "/clock", body: Array(#"{"set":"2031-01-01T00:00:00Z"}"#.utf8))
        #expect(back.status == 400 && back.text.contains("clock_backwards"))
        // A namespace's clock is shared too, and apart from the default one's.
        #expect(try clientA.send("PUT", "/ns/c1/store/k", body: Array("1".utf8)).status == 201)
        #expect(try clientA.send("POST", "/ns/c1/clock", body: Array(#"{"advance":"3d"}"#.utf8)).status == 200)
        try Poll.until(10, "server B to see c1's clock") { (try? Self.clock(clientB, "/ns/c1").offsetMs) ?? 0 >= 259_200_000 }
        #expect(try Self.clock(clientB).frozen)
        #expect(try clientB.send("DELETE", "/clock").status == 200)
        try Poll.until(10, "server A back on the system clock") { (try? Self.clock(clientA).offsetMs) == 0 }
    }

    @Test func aServerStartedAfterAMoveReadsItAtOnce() throws {
        let database = try TestPostgres.shared()
        let schema = TestPostgres.makeSchemaName()
        let url = database.url(schema: schema)
        let first = try ChildServer(dataDirectory: nil, arguments: ["--store", url, "--log-level", "warning"])
        #expect(try WireClient(port: first.port).send("POST", "/clock", body: Array(#"{"advance":"5h"}"#.utf8)).status == 200)
        first.kill(SIGTERM)
        let second = try ChildServer(dataDirectory: nil, arguments: ["--store", url, "--log-level", "warning"])
        defer { second.kill(SIGTERM) }
        #expect(try Self.clock(WireClient(port: second.port)).offsetMs >= 18_000_000)
    }
}
