import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// API.md, Protocol: silent or idle sockets can never lock other clients
/// out. A connection that has sent nothing is given the header timeout, not
/// the idle one; at the connection limit a new connection closes the
/// longest-idle one with no request in flight, and only when every
/// connection has a request in flight (a parked watch, an event stream) is
/// a new one answered 503.
@Suite(.blockingLane) struct ConnectionCapTests {
    /// A conditional GET that waits (`?wait=`) while the value's ETag is `etag`.
    static func watchRequest(_ target: String, etag: String) -> String {
        "GET \(target) HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: \(etag)\r\n\r\n"
    }

    /// Polls until `server.watcherCount == count`; false after `seconds`.
    static func waitForWatchers(_ server: TestServer, _ count: Int, within seconds: Double = Poll.patience) -> Bool {
        Poll.holds(within: seconds, every: 0.001) { server.server.watcherCount == count }
    }

    /// Sends a request on `connection` and reads its answer.
    static func ping(_ connection: HTTPClientConnection) throws -> Int {
        try connection.request("GET", "/healthz").status
    }

    @Test func atTheCapTheLongestIdleConnectionMakesRoom() throws {
        let server = try TestServer { $0.http.maxConnections = 2 }
        defer { server.stop() }
        let oldest = try server.connection(timeout: 10)
        #expect(try Self.ping(oldest) == 200)
        usleep(50_000)
        let newer = try server.connection(timeout: 10)
        #expect(try Self.ping(newer) == 200)

        // A third client is served, not refused, and the oldest idle one goes.
        let third = try server.connection(timeout: 10)
        #expect(try Self.ping(third) == 200)
        #expect(ProtocolWire.closedByServer(oldest, within: 10), "the longest-idle connection was not the one closed")
        #expect(try Self.ping(newer) == 200, "a connection idle for less time was closed")
        #expect(try Self.ping(third) == 200)
        // Read on a connection already open: a new one would evict again.
        let metrics = try third.request("GET", "/metrics").text
        #expect(metrics.contains("larder_http_connections_evicted_total 1"), "\(metrics)")
    }

    /// Sockets that connect and say nothing are idle from the start: a
    /// flood of them at the cap cannot keep a real client out.
    @Test func silentSocketsAtTheCapDoNotLockAClientOut() throws {
        let server = try TestServer { $0.http.maxConnections = 50 }
        defer { server.stop() }
        let silent = try (0..<200).map { _ in try server.connection(timeout: 10) }
        let client = try server.connection(timeout: 10)
        #expect(try Self.ping(client) == 200)
        #expect(try client.request("PUT", "/store/cap/k", body: Array("v".utf8)).status == 201)
        withExtendedLifetime(silent) {}
    }

    @Test func connectionsWithRequestsInFlightAreNeverEvicted() throws {
        let server = try TestServer { $0.http.maxConnections = 2 }
        defer { server.stop() }
        let writer = try server.connection(timeout: 60)
        let etag = try #require(try writer.request("PUT", "/store/cap/w", body: Array("old".utf8)).header("ETag"))
        writer.close()
        try Poll.until(Poll.patience, "the writer's connection to close") { server.server.http.connectionCount == 0 }
        // One watch at a time, each parked before the next connects: a
        // connection whose request is still unread in its socket counts as
        // idle, and at the cap it may be the one evicted.
        var watches: [HTTPClientConnection] = []
        for n in 1...2 {
            let watch = try server.connection(timeout: 60)
            try watch.send(Self.watchRequest("/store/cap/w?wait=300", etag: etag))
            watches.append(watch)
            #expect(Self.waitForWatchers(server, n))
        }

        let third = try server.connection(timeout: 10)
        let busy = try third.readResponse()
        ProtocolWire.expectError(busy, 503, "too_many_connections")
        #expect(busy.header("Retry-After") != nil)
        ProtocolWire.expectCloses(busy, third)
        #expect(server.server.watcherCount == 2, "a parked watch was evicted")

        // One watcher leaves, freeing a slot for a write: the other watch,
        // kept through all this, is answered with the new value.
        watches.removeFirst().close()
        #expect(Self.waitForWatchers(server, 1))
        var put: ClientResponse? = nil
        for _ in 0..<100 where put?.status != 204 {
            put = try? server.client().put("cap/w", "new")
            if put?.status != 204 { usleep(50_000) }
        }
        #expect(put?.status == 204)
        #expect(try watches[0].readResponse().text == "new")
    }

    /// The header timeout, not the idle one, for a socket that never speaks.
    @Test func aConnectionThatSendsNothingHasTheHeaderTimeout() throws {
        let server = try TestServer {
            $0.http.headerTimeout = 1
            $0.http.idleTimeout = 600
        }
        defer { server.stop() }
        let silent = try server.connection(timeout: 10)
        #expect(ProtocolWire.closedByServer(silent, within: 60), "a silent socket was kept for the idle timeout")
        // A keep-alive connection between requests keeps the idle timeout.
        let talking = try server.connection(timeout: 10)
        #expect(try Self.ping(talking) == 200)
        #expect(ProtocolWire.staysOpen(talking, for: 2), "an idle keep-alive connection got the header timeout")
    }
}
