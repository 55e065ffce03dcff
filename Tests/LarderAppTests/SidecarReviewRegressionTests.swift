import Dispatch
import Foundation
import LarderClient
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// Defects found in the review of the fixture layer, snapshots, faults, the
/// runner's shutdown and the expiry change; each test fails without its fix.
@Suite(.serialized) struct SidecarReviewRegressionTests {
    static func seconds(since start: UInt64) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    // MARK: - Shutdown

    /// A response whose body was still being sent when the stop began (a
    /// slow reader of a large value) left a keep-alive connection behind
    /// once it was complete: nothing closed it, so the stop waited out the
    /// whole grace period (10 s by default) for an idle connection.
    @Test func aResponseStillBeingSentAtShutdownDoesNotHoldTheStopForTheGrace() throws {
        let server = try TestServer { $0.http.shutdownGrace = 6 }
        defer { server.stop() }
        let big = Bytes.random(count: 8 << 20, seed: 41)   // incompressible: fills the socket buffers
        #expect(try server.client().put("big", big).status == 201)
        let connection = try server.connection(timeout: 10)
        try connection.send("GET /store/big HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(300_000)   // the answer is under way; the client has not read yet
        let http = server.server.http
        let stop = Background { () -> Double in
            let start = DispatchTime.now().uptimeNanoseconds
            http.shutdown()
            return Self.seconds(since: start)
        }
        usleep(200_000)
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(S.same(response.body, big))
        let took = try stop.wait(15)
        #expect(took < 2, "the stop took \(took) s: the finished keep-alive connection waited for the grace")
        #expect(ProtocolWire.closedByServer(connection, within: 1))
    }

    // MARK: - Faults

    /// A watch whose change came during a delay longer than the rest of its
    /// wait: at the watch's deadline the connection took the deadline answer
    /// (304) and ran the cancel handlers, which dropped the held 200. The
    /// client was told "not modified" about a value that had changed.
    @Test func aDelayedWatchAnswerIsNotReplacedByTheWatchDeadline() throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        let client = server.client()
        let etag = try #require(try client.put("watched/k", "v1").header("ETag"))
        let rules = try client.send("PUT", "/faults",
                                    body: Array(#"[{"id":"late","prefix":"watched/","methods":["GET"],"delayMs":1500}]"#.utf8))
        #expect(rules.status == 200)
        let port = server.port
        let watcher = Background { () -> ClientResponse in
            let connection = try HTTPClientConnection(port: port, timeout: 15)
            return try connection.request("GET", "/store/watched/k?wait=1", headers: [("If-None-Match", etag)])
        }
        #expect(WatchTests.waitForWatchers(server, 1))
        #expect(try client.put("watched/k", "v2").status == 204)
        let woken = try watcher.wait(10)
        #expect(woken.status == 200, "the change was answered \(woken.status)")
        #expect(woken.text == "v2")
        #expect(woken.header("Larder-Fault") == "late")
    }
}
