import LarderModel
import Foundation
import LarderTestSupport
import LarderWire
import LarderHTTP
import LarderSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Requests one after another on one connection: pipelined bodies of both
/// framings, HEAD, bodies answered without being read (skipped or closed),
/// and idle connections at shutdown.
@Suite(.blockingLane) struct PipeliningAndKeepAliveTests {
    @Test func echoesFixedAndChunkedBodiesPipelined() throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        try connection.send("POST /echo?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n1;x=y\r\nf\r\n0\r\nT: 1\r\n\r\n"
            + "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try connection.readResponse()
        #expect(first.status == 200)
        #expect(first.text == "abc")
        #expect(first.header("X-Target") == "/echo?a=1")
        let second = try connection.readResponse()
        #expect(second.text == "def")
        #expect(second.header("X-Chunked") == "1")
        let third = try connection.readResponse()
        #expect(third.header("X-Method") == "GET")
        #expect(third.body.isEmpty)
        #expect(third.header("Content-Length") == "0")
        #expect(third.header("Server") == "larder")
        #expect(third.header("Date") != nil)
    }

    @Test func headResponseHasNoBody() throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        try connection.send("HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\nGET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try connection.readResponse(bodyExpected: false)
        #expect(head.status == 200)
        // If HEAD had sent a body, this would read garbage as the status line.
        let get = try connection.readResponse()
        #expect(get.status == 200)
        #expect(get.header("X-Method") == "GET")
    }

    @Test func smallUnreadBodyIsSkippedAndTheConnectionKept() throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        // /fail answers without reading the body; the server must skip its bytes.
        try connection.send("POST /fail HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\nGET /smuggled HT"
            + "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        let fail = try connection.readResponse()
        #expect(fail.status == 418)
        #expect(fail.header("Connection") == nil)
        let next = try connection.readResponse()
        #expect(next.header("X-Target") == "/echo")
    }

    @Test func unreadChunkedBodyClosesTheConnection() throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        try connection.send("POST /fail HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
            + "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        let fail = try connection.readResponse()
        #expect(fail.status == 418)
        #expect(fail.header("Connection") == "close")
        #expect(try connection.isClosedByPeer())
    }

    @Test func shutdownClosesIdleConnections() throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        #expect(try connection.request("GET", "/echo").status == 200)
        echo.server.shutdown()
        #expect(echo.server.connectionsCutAtShutdown == 0, "the idle connection was left to the end of the grace")
        #expect(try connection.isClosedByPeer())
        #expect(echo.server.connectionCount == 0)
    }
}
