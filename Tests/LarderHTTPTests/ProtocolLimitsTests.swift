import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every configurable limit answers its status with the JSON error body.
@Suite(.blockingLane) struct ProtocolLimitsTests {
    @Test func requestLineOver8KiBIs414() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let target = "/store/" + String(repeating: "a", count: 9000)
        try connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 414, "uri_too_long")
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func requestLineOver8KiBWithoutItsEndIs414() throws {
        // The limit holds before the line ends: the server does not buffer on.
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("GET /" + String(repeating: "b", count: 8300))
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 414, "uri_too_long")
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func requestLineJustUnderTheLimitIsServed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        // "GET " + target + " HTTP/1.1" is exactly 8192 bytes.
        let prefix = "/nothing-here?pad="
        let target = prefix + String(repeating: "p", count: 8192 - 4 - 9 - prefix.utf8.count)
        #expect(("GET " + target + " HTTP/1.1").utf8.count == 8192)
        try connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 404, "not_found")
        #expect(try connection.request("GET", "/healthz").status == 200)
    }

    @Test func headerSectionOver32KiBIs431() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        var head = "GET /healthz HTTP/1.1\r\nHost: x\r\n"
        for i in 0..<40 { head += "X-Filler-\(i): " + String(repeating: "f", count: 1000) + "\r\n" }
        head += "\r\n"
        try? connection.send(head)
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 431, "headers_too_large")
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func headersJustUnder32KiBAreServed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        var head = "GET /healthz HTTP/1.1\r\nHost: x\r\n"
        for i in 0..<30 { head += "X-Filler-\(i): " + String(repeating: "f", count: 1000) + "\r\n" }
        head += "\r\n"
        try connection.send(head)
        #expect(try connection.readResponse().status == 200)
    }

    @Test func requestLineOfExactlyTheLimitIsAcceptedHoweverTCPSplitsIt() throws {
        let server = try TestServer()
        defer { server.stop() }
        let prefix = "/nothing-here?pad="
        let line = "GET " + prefix + String(repeating: "p", count: 8192 - 4 - 9 - prefix.utf8.count) + " HTTP/1.1"
        #expect(line.utf8.count == 8192)
        // Whole: accepted (the limit excludes the CRLF).
        let whole = try server.connection(timeout: 5)
        try whole.send(line + "\r\nHost: x\r\n\r\n")
        #expect(try whole.readResponse().status == 404)
        // The same bytes, with the TCP stream split between CR and LF.
        let split = try server.connection(timeout: 5)
        try split.send(line + "\r")
        usleep(100_000)
        try? split.send("\nHost: x\r\n\r\n")
        let response = try split.readResponse()
        #expect(response.status == 404, "answered \(response.status): \(response.text)")
    }

    /// Header field lines (each with its CRLF) totalling exactly `size` bytes.
    private static func headerFields(totalling size: Int) -> String {
        let fixed = "Host: x\r\n" + "X-Pad: " + "\r\n"
        return "Host: x\r\nX-Pad: " + String(repeating: "p", count: size - fixed.utf8.count) + "\r\n"
    }

    @Test func headerSectionOfExactly32KiBIsAccepted() throws {
        let server = try TestServer()
        defer { server.stop() }
        let fields = Self.headerFields(totalling: 32 * 1024)
        #expect(fields.utf8.count == 32768)
        let connection = try server.connection(timeout: 5)
        try connection.send("GET /healthz HTTP/1.1\r\n" + fields + "\r\n")
        let response = try connection.readResponse()
        // 32768 bytes of field lines is not "larger than 32768 bytes", and the
        // request line limit is inclusive too; the server is off by one (it
        // counts the request line's LF as part of the header section).
        #expect(response.status == 200, "answered \(response.status): \(response.text)")
    }

    @Test func headerSectionUnderTheLimitIsAcceptedHoweverTCPSplitsIt() throws {
        let server = try TestServer()
        defer { server.stop() }
        let fields = Self.headerFields(totalling: 32 * 1024 - 1)
        let whole = try server.connection(timeout: 5)
        try whole.send("GET /healthz HTTP/1.1\r\n" + fields + "\r\n")
        #expect(try whole.readResponse().status == 200)
        // The same bytes, split between the CR and LF of the final empty line.
        let split = try server.connection(timeout: 5)
        try split.send("GET /healthz HTTP/1.1\r\n" + fields + "\r")
        usleep(100_000)
        try? split.send("\n")
        let response = try split.readResponse()
        #expect(response.status == 200, "answered \(response.status): \(response.text)")
    }

    @Test func stalledBodyIs408AfterTheIdleTimeout() throws {
        let server = try TestServer { $0.http.idleTimeout = 0.5 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let started = Date()
        try connection.send("PUT /store/stall HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        let response = try connection.readResponse()
        let elapsed = Date().timeIntervalSince(started)
        ProtocolWire.expectError(response, 408, "request_timeout")
        #expect(elapsed >= 0.4, "408 after \(elapsed) s, before the idle timeout")
        ProtocolWire.expectCloses(response, connection)
        #expect(try server.client().get("stall").status == 404, "a partial body was stored")
    }

    @Test func contentLengthOverTheBodyLimitIs413() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1024 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/big HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n")
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 413, "payload_too_large")
        ProtocolWire.expectCloses(response, connection)
        // Nothing was stored, and exactly the limit is fine.
        let client = server.client()
        #expect(try client.get("big").status == 404)
        #expect(try client.put("big", [UInt8](repeating: 7, count: 1024)).status == 201)
        #expect(try client.get("big").body.count == 1024)
    }

    @Test func chunkedBodyOverTheLimitIs413() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1024 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let chunk = String(repeating: "z", count: 600)
        try? connection.send("PUT /store/big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 413, "payload_too_large")
        ProtocolWire.expectCloses(response, connection)
        #expect(try server.client().get("big").status == 404)
    }

    @Test func headerReadTimeoutIs408ThenClose() throws {
        let server = try TestServer { $0.http.headerTimeout = 0.5 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let started = Date()
        try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        let response = try connection.readResponse()
        let elapsed = Date().timeIntervalSince(started)
        ProtocolWire.expectError(response, 408, "request_timeout")
        #expect(elapsed >= 0.4, "408 came after \(elapsed) s, before the header timeout")
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func headerTimeoutAlsoCoversTheSecondRequestOfAConnection() throws {
        let server = try TestServer { $0.http.headerTimeout = 0.5 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        #expect(try connection.request("GET", "/healthz").status == 200)
        try connection.send("GET /heal")
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 408, "request_timeout")
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func idleKeepAliveConnectionIsClosed() throws {
        let server = try TestServer { $0.http.idleTimeout = 0.5 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        #expect(try connection.request("GET", "/healthz").status == 200)
        let idleFrom = Date()
        #expect(ProtocolWire.staysOpen(connection, for: 0.2), "closed before the idle timeout")
        #expect(ProtocolWire.closedByServer(connection), "idle connection was not closed")
        let elapsed = Date().timeIntervalSince(idleFrom)
        #expect(elapsed >= 0.4, "closed after \(elapsed) s idle, before the idle timeout")
        // The server let go of it.
        var open = server.server.http.connectionCount
        for _ in 0..<100 where open != 0 { usleep(10_000); open = server.server.http.connectionCount }
        #expect(open == 0)
    }

    @Test func activityKeepsAConnectionAlivePastTheIdleTimeout() throws {
        let server = try TestServer { $0.http.idleTimeout = 1 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        // 5 requests 0.3 s apart: 1.2 s in all, never idle for 1 s.
        for _ in 0..<4 {
            #expect(try connection.request("GET", "/healthz").status == 200)
            usleep(300_000)
        }
        #expect(try connection.request("GET", "/healthz").status == 200)
    }

    @Test func aFreedConnectionSlotIsReused() throws {
        let server = try TestServer { $0.http.maxConnections = 1 }
        defer { server.stop() }
        do {
            let first = try server.connection(timeout: 5)
            try first.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let response = try first.readResponse()
            #expect(response.status == 200)
            #expect(ProtocolWire.closedByServer(first))
        }
        var open = server.server.http.connectionCount
        for _ in 0..<200 where open != 0 { usleep(10_000); open = server.server.http.connectionCount }
        #expect(open == 0)
        #expect(try server.connection(timeout: 5).request("GET", "/healthz").status == 200)
    }

    @Test func leadingBlankLinesCannotPinTheServer() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send(String(repeating: "\n", count: 60_000) + "GET /abc")
        try? connection.send(String(repeating: "x", count: 9_000))
        let response = try connection.readResponse()
        #expect(response.status == 414)
        #expect(try server.client().send("GET", "/healthz").status == 200)
    }
}
