import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `Expect: 100-continue`: `100 Continue` before the body when the request
/// will be accepted, else the final error without reading the body.
@Suite(.blockingLane) struct ProtocolExpectContinueTests {
    @Test func putGets100ContinueBeforeTheBodyThen201() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/cont HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n")
        // No body sent yet: the interim answer must come on its own.
        let interim = try connection.readResponse(skipInterim: false)
        #expect(interim.status == 100)
        #expect(interim.body.isEmpty)
        try connection.send("hello world")
        let final = try connection.readResponse(skipInterim: false)
        #expect(final.status == 201)
        #expect(final.header("ETag") != nil)
        // The connection stays usable and the body is stored whole.
        let get = try connection.request("GET", "/store/cont")
        #expect(get.status == 200)
        #expect(get.text == "hello world")
    }

    @Test func chunkedPutWithExpectGets100Continue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/cont HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
        #expect(try connection.readResponse(skipInterim: false).status == 100)
        try connection.send("4\r\nabcd\r\n0\r\n\r\n")
        #expect(try connection.readResponse(skipInterim: false).status == 201)
        #expect(try connection.request("GET", "/store/cont").text == "abcd")
    }

    @Test func bodyOverTheLimitGets413WithoutContinue() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1024 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/big HTTP/1.1\r\nHost: x\r\nContent-Length: 4096\r\nExpect: 100-continue\r\n\r\n")
        // The first thing back is the final answer, not 100.
        let response = try connection.readResponse(skipInterim: false)
        ProtocolWire.expectError(response, 413, "payload_too_large")
        ProtocolWire.expectCloses(response, connection)
        #expect(try server.client().get("big").status == 404)
    }

    @Test func invalidKeyGets400WithoutContinue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/a//b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse(skipInterim: false)
        ProtocolWire.expectError(response, 400, "invalid_key")
        // The body was never read, so the connection cannot continue.
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func unknownPathGets404WithoutContinue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse(skipInterim: false)
        ProtocolWire.expectError(response, 404, "not_found")
        ProtocolWire.expectCloses(response, connection)
    }

    @Test func unsupportedExpectationIs417() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 200-ok\r\n\r\nhello")
        let response = try connection.readResponse(skipInterim: false)
        ProtocolWire.expectError(response, 417, "expectation_failed")
        ProtocolWire.expectCloses(response, connection)
        #expect(try server.client().get("e").status == 404)
    }

    @Test func bodySentWithoutWaitingForContinueIsStillRead() throws {
        // curl sends the body after a second even without 100: the 100 may
        // then arrive after the body was sent, and both answers still come.
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/eager HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc"
            + "GET /store/eager HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try connection.readResponse(skipInterim: false).status == 100)
        #expect(try connection.readResponse(skipInterim: false).status == 201)
        #expect(try connection.readResponse().text == "abc")
    }

    @Test func http10IgnoresExpect() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/old HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc")
        // RFC 9110 10.1.1: a 1.0 client is not sent 100.
        let response = try connection.readResponse(skipInterim: false)
        #expect(response.status == 201)
        ProtocolWire.expectCloses(response, connection)
    }
}
