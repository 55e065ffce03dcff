import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Input that is not HTTP gets a 4xx (or a close), and never hurts the
/// server: a well-behaved client on a new connection is served after it.
@Suite(.blockingLane) struct ProtocolGarbageTests {
    /// Sends `bytes`, then expects a 4xx JSON error followed by a close, or
    /// just a close. Then checks the server still serves a fresh client.
    private func expectRefusedThenServerHealthy(_ bytes: [UInt8], on server: TestServer,
                                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let connection = try server.connection(timeout: 5)
        try? connection.send(bytes)
        if let response = try? connection.readResponse() {
            #expect((400..<500).contains(response.status), "answered \(response.status) to garbage", sourceLocation: sourceLocation)
            ProtocolWire.expectError(response, response.status, sourceLocation: sourceLocation)
            ProtocolWire.expectCloses(response, connection, sourceLocation: sourceLocation)
        } else {
            #expect(ProtocolWire.closedByServer(connection), "neither an answer nor a close", sourceLocation: sourceLocation)
        }
        let good = try server.connection(timeout: 5)
        let put = try good.request("PUT", "/store/after-garbage", body: Array("fine".utf8))
        #expect(put.status == 201 || put.status == 204, sourceLocation: sourceLocation)
        let get = try good.request("GET", "/store/after-garbage")
        #expect(get.status == 200, sourceLocation: sourceLocation)
        #expect(get.text == "fine", sourceLocation: sourceLocation)
    }

    @Test func helloIs400() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("HELLO\r\n\r\n")
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 400, "bad_request")
        ProtocolWire.expectCloses(response, connection)
        try expectRefusedThenServerHealthy(Array("HELLO\r\n\r\n".utf8), on: server)
    }

    @Test func randomBytesAreRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        for seed in UInt64(1)...5 {
            // Random bytes, ended by an empty line so the server sees a whole "head".
            try expectRefusedThenServerHealthy(Bytes.random(count: 2000, seed: seed) + Array("\r\n\r\n".utf8), on: server)
        }
    }

    @Test func binaryBlobIsRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        // Every byte value, a few times over, the way a TLS or gzip stream looks.
        var blob: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]
        for _ in 0..<4 { blob += (0...255).map { UInt8($0) } }
        try expectRefusedThenServerHealthy(blob + Array("\r\n\r\n".utf8), on: server)
        // A gzip header where a request line should be.
        try expectRefusedThenServerHealthy([0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0x0A, 0x0A], on: server)
    }

    @Test func malformedRequestLinesAreRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        for line in ["GET\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n",
                     "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/9.9\r\nHost: x\r\n\r\n",
                     "GET / FTP/1.1\r\nHost: x\r\n\r\n", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n",
                     "GET store HTTP/1.1\r\nHost: x\r\n\r\n", "GET /a\u{7F}b HTTP/1.1\r\nHost: x\r\n\r\n",
                     "GET / HTTP/1.1\r\nno colon here\r\n\r\n", "GET / HTTP/1.1\r\n: empty-name\r\n\r\n"] {
            let connection = try server.connection(timeout: 5)
            try connection.send(line)
            let response = try connection.readResponse()
            #expect((400..<600).contains(response.status), "\(line.debugDescription) answered \(response.status)")
            ProtocolWire.expectError(response, response.status)
            ProtocolWire.expectCloses(response, connection)
        }
        let version = try server.connection(timeout: 5)
        try version.send("GET / HTTP/2.0\r\nHost: x\r\n\r\n")
        ProtocolWire.expectError(try version.readResponse(), 505, "version_not_supported")
        #expect(try server.client().send("GET", "/healthz").status == 200)
    }

    @Test func clientThatVanishesMidRequestDoesNotHurtTheServer() throws {
        let server = try TestServer()
        defer { server.stop() }
        for partial in ["PUT /store/gone HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly part",
                        "PUT /store/gone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc",
                        "GET /store/gone HTTP/1.1\r\nHo"] {
            let connection = try server.connection(timeout: 5)
            try connection.send(partial)
            // Closing the socket drops the connection (FIN) before the request is whole.
        }
        var open = server.server.http.connectionCount
        for _ in 0..<200 where open != 0 { usleep(10_000); open = server.server.http.connectionCount }
        #expect(open == 0, "connections still open after their clients left")
        let client = server.client()
        #expect(try client.get("gone").status == 404, "a partial body was stored")
        #expect(try client.put("gone", "whole").status == 201)
    }

    /// A chunked body's trailer section is parsed as header fields: a
    /// malformed line is a 400 and nothing is stored; a good one is taken.
    @Test func aMalformedTrailerLineIs400AndStoresNothing() throws {
        let server = try TestServer()
        defer { server.stop() }
        for (i, trailer) in ["junk", "no colon here", ": nameless", "Bad Name: 1"].enumerated() {
            let connection = try server.connection(timeout: 10)
            try connection.send("PUT /store/trailer/bad\(i) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                + "5\r\nhello\r\n0\r\n\(trailer)\r\n\r\n")
            let response = try connection.readResponse()
            ProtocolWire.expectError(response, 400, "bad_request")
            ProtocolWire.expectCloses(response, connection)
            #expect(try server.client().get("trailer/bad\(i)").status == 404, "a body with trailer \(trailer.debugDescription) was stored")
        }
        let connection = try server.connection(timeout: 10)
        try connection.send("PUT /store/trailer/good HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            + "5\r\nhello\r\n0\r\nX-Check: 1\r\n\r\n")
        #expect(try connection.readResponse().status == 201)
        #expect(try server.client().get("trailer/good").text == "hello")
    }
}
