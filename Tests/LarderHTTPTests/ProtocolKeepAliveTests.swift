import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Connection management: keep-alive, pipelining, HTTP/1.0, Connection:
/// close, half-closed clients, slow clients.
@Suite(.blockingLane) struct ProtocolKeepAliveTests {
    @Test func hundredRequestsOnOneKeepAliveConnection() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        for i in 0..<50 {
            let put = try connection.request("PUT", "/store/ka/\(i)", body: Array("value \(i)".utf8))
            #expect(put.status == 201)
            #expect(put.header("Connection") == nil)
            let get = try connection.request("GET", "/store/ka/\(i)")
            #expect(get.status == 200)
            #expect(get.text == "value \(i)")
            #expect(get.header("Connection") == nil)
        }
        // Still the same open socket: nothing closed it, and it still answers.
        #expect(ProtocolWire.staysOpen(connection))
        let list = try connection.request("GET", "/store/ka/")
        #expect(list.status == 200)
        #expect((list.json?["keys"] as? [Any])?.count == 50)
        #expect(ProtocolWire.staysOpen(connection))
        #expect(server.server.http.connectionCount == 1)
    }

    @Test func threePipelinedRequestsInOneWriteAreAnsweredInOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let bytes = "PUT /store/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
            + "GET /store/a HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /store/b HTTP/1.1\r\nHost: x\r\n\r\n"
        try connection.send(bytes)
        let put = try connection.readResponse()
        #expect(put.status == 201)
        let getA = try connection.readResponse()
        #expect(getA.status == 200)
        #expect(getA.text == "hello")
        #expect(getA.header("Content-Type") == "text/plain")
        #expect(getA.header("ETag") == put.header("ETag"))
        let getB = try connection.readResponse()
        ProtocolWire.expectError(getB, 404, "not_found")
        #expect(ProtocolWire.staysOpen(connection))
    }

    @Test func pipelinedRequestsSplitAcrossWritesMidHead() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let all = Array(("PUT /store/p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            + "GET /store/p HTTP/1.1\r\nHost: x\r\n\r\n" + "DELETE /store/p HTTP/1.1\r\nHost: x\r\n\r\n").utf8)
        // Cut in the middle of the second head and of the third.
        try connection.send(Array(all[0..<70]))
        usleep(20_000)
        try connection.send(Array(all[70..<110]))
        usleep(20_000)
        try connection.send(Array(all[110...]))
        #expect(try connection.readResponse().status == 201)
        let get = try connection.readResponse()
        #expect(get.status == 200)
        #expect(get.text == "abc")
        #expect(try connection.readResponse().status == 204)
    }

    @Test func thousandsOfPipelinedRequestsOverflowingTheInputBuffer() throws {
        let server = try TestServer()
        defer { server.stop() }
        #expect(try server.client().put("k", "0123456789").status == 201)
        let connection = try server.connection(timeout: 10)
        let count = 3000
        var burst: [UInt8] = []
        for i in 0..<count { burst += Array("GET /store/k?n=\(i) HTTP/1.1\r\nHost: x\r\n\r\n".utf8) }
        #expect(burst.count > 64 * 1024)
        // Send from another thread: the answers fill the socket while we send.
        let fd = connection.fd
        let payload = burst
        let sent = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var offset = 0
            while offset < payload.count {
                let n = payload.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                offset += n
            }
            sent.signal()
        }
        var ok = 0
        for _ in 0..<count {
            let response = try connection.readResponse()
            if response.status == 200 && response.text == "0123456789" { ok += 1 }
        }
        sent.wait()
        #expect(ok == count)
        #expect(ProtocolWire.staysOpen(connection))
    }

    @Test func pipelinedRequestsAroundAStreamedValueStayInOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let big = Bytes.random(count: 3 << 20, seed: 99)
        let client = server.client()
        #expect(try client.put("big", big).status == 201)
        #expect(try client.put("small", "tiny").status == 201)
        let connection = try server.connection(timeout: 10)
        try connection.send("GET /store/big HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /store/small HTTP/1.1\r\nHost: x\r\n\r\n"
            + "HEAD /store/big HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /store/big HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n"
            + "GET /store/small HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try connection.readResponse()
        #expect(first.status == 200)
        #expect(first.body == big)
        #expect(try connection.readResponse().text == "tiny")
        let head = try connection.readResponse(bodyExpected: false)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(big.count))
        // Whatever Range support exists, the answer is framed and in order.
        let ranged = try connection.readResponse()
        #expect(ranged.status == 200 || ranged.status == 206)
        #expect(try connection.readResponse().text == "tiny")
    }

    @Test func http10RequestIsAnsweredThenClosed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("GET /healthz HTTP/1.0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.json?["status"] as? String == "ok")
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func http10KeepAliveIsStillClosed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        // A pipelined second request must not be answered: 1.0 is answered and closed.
        try connection.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func connectionCloseOnHTTP11Closes() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/c HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi"
            + "GET /store/c HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 201)
        ProtocolWire.expectCloses(response, connection)
        // The PUT itself was complete and is stored.
        #expect(try server.client().get("c").text == "hi")
    }

    @Test func halfClosedClientStillGetsItsResponses() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/half HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\ndata"
            + "GET /store/half HTTP/1.1\r\nHost: x\r\n\r\n")
        connection.shutdownWrite()
        #expect(try connection.readResponse().status == 201)
        let get = try connection.readResponse()
        #expect(get.status == 200)
        #expect(get.text == "data")
        // Nothing more can come from the client: the server closes.
        #expect(ProtocolWire.closedByServer(connection))
    }

    @Test func slowClientDrippingOneByteAtATimeIsAnswered() throws {
        let server = try TestServer { $0.http.headerTimeout = 3 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let request = Array("PUT /store/drip HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello".utf8)
        for byte in request {
            try connection.send([byte])
            usleep(2_000)
        }
        let put = try connection.readResponse()
        #expect(put.status == 201)
        let getBytes = Array("GET /store/drip HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        for byte in getBytes {
            try connection.send([byte])
            usleep(1_000)
        }
        let get = try connection.readResponse()
        #expect(get.status == 200)
        #expect(get.text == "hello")
        #expect(get.header("Content-Type") == "text/plain")
    }

    @Test func emptyLinesBeforeARequestAreIgnored() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
    }

    @Test func unknownPathIs404JSON() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let response = try connection.request("GET", "/no/such/endpoint")
        ProtocolWire.expectError(response, 404, "not_found")
        // An error that is not about framing keeps the connection.
        #expect(response.header("Connection") == nil)
        #expect(try connection.request("GET", "/healthz").status == 200)
    }

    @Test func methodNotAllowedCarriesAllow() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let copy = try connection.request("COPY", "/store/x", body: Array("{}".utf8))
        ProtocolWire.expectError(copy, 405, "method_not_allowed")
        let allowKey = Set((copy.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(allowKey == ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"])

        let trace = try server.connection(timeout: 5).request("TRACE", "/store/")
        ProtocolWire.expectError(trace, 405, "method_not_allowed")
        let allowPrefix = Set((trace.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(allowPrefix.contains("GET"))
        #expect(allowPrefix.contains("DELETE"))
        #expect(!allowPrefix.contains("TRACE"))
        #expect(!allowPrefix.contains("PATCH"))
    }

    @Test func answeredRequestWithAStalledBodyGetsNoStray408() throws {
        let server = try TestServer { $0.http.idleTimeout = 0.6; $0.http.headerTimeout = 0.6 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 3)
        try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        #expect(try connection.readResponse().status == 200)
        // The rest of the body never comes: the connection closes, with no second answer.
        #expect(try connection.isClosedByPeer())
    }
}
