import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Message framing is strict where leniency allows request smuggling
/// (RFC 9112 6.3, 11.2): every ambiguous request is refused and its
/// connection closed, and bytes after it are never read as a request.
@Suite(.blockingLane) struct ProtocolSmugglingTests {
    /// Sends `bytes` on a fresh connection, expects `status` with the JSON
    /// error body, and the connection closed with no second response.
    private func expectRejected(_ bytes: String, _ status: Int, _ code: String? = "bad_request",
                                on server: TestServer,
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let connection = try server.connection(timeout: 5)
        try connection.send(bytes)
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, status, code, sourceLocation: sourceLocation)
        ProtocolWire.expectCloses(response, connection, sourceLocation: sourceLocation)
    }

    /// A request that smuggles `PUT /store/smuggled` behind its own body.
    private static let smuggled = "PUT /store/smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nbad"

    @Test func contentLengthAndTransferEncodingTogetherIs400AndClosed() throws {
        let server = try TestServer()
        defer { server.stop() }
        // CL.TE: a front end using Content-Length would forward the whole
        // thing as one request; one using chunked would see a second one.
        let body = "0\r\n\r\n" + Self.smuggled
        try expectRejected("PUT /store/outer HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n" + body, 400, on: server)
        // TE.CL order of the fields changes nothing.
        try expectRejected("PUT /store/outer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            + "Content-Length: 4\r\n\r\n\(String(Self.smuggled.utf8.count, radix: 16))\r\n" + Self.smuggled + "\r\n0\r\n\r\n", 400, on: server)
        let client = server.client()
        #expect(try client.get("smuggled").status == 404, "the smuggled request was processed")
        #expect(try client.get("outer").status == 404)
    }

    @Test func smuggledBytesAfterARejectedRequestAreNotProcessed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "0\r\n\r\n" + Self.smuggled)
        let response = try connection.readResponse()
        ProtocolWire.expectError(response, 400, "bad_request")
        // Exactly one response, then the close: no answer to the smuggled PUT.
        ProtocolWire.expectCloses(response, connection)
        #expect(try server.client().get("smuggled").status == 404)
    }

    @Test func conflictingContentLengthsAre400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("PUT /store/cl HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400, on: server)
        try expectRejected("PUT /store/cl HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello!", 400, on: server)
        #expect(try server.client().get("cl").status == 404)
    }

    @Test func repeatedEqualContentLengthsAreAccepted() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/same HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello")
        #expect(try connection.readResponse().status == 201)
        try connection.send("PUT /store/same HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
        #expect(try connection.readResponse().status == 204)
        // The framing was right: the connection is still in sync.
        let get = try connection.request("GET", "/store/same")
        #expect(get.status == 200)
        #expect(get.text == "abc")
    }

    @Test func gzipThenChunkedTransferEncodingIs501() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("PUT /store/te HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                           501, "not_implemented", on: server)
    }

    @Test func transferEncodingNotEndingInChunkedIs400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("PUT /store/te HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400, on: server)
        try expectRejected("PUT /store/te HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", 400, on: server)
        try expectRejected("PUT /store/te HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 400, on: server)
        #expect(try server.client().get("te").status == 404)
    }

    @Test func transferEncodingInHTTP10Is400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("PUT /store/te HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400, on: server)
        #expect(try server.client().get("te").status == 404)
    }

    @Test func whitespaceBeforeTheColonIs400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("PUT /store/ws HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc", 400, on: server)
        try expectRejected("PUT /store/ws HTTP/1.1\r\nHost: x\r\nTransfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n", 400, on: server)
        #expect(try server.client().get("ws").status == 404)
    }

    @Test func obsFoldIs400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: part one\r\n part two\r\n\r\n", 400, on: server)
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: part one\r\n\tpart two\r\n\r\n", 400, on: server)
    }

    @Test func invalidChunkSizeIs400() throws {
        let server = try TestServer()
        defer { server.stop() }
        for size in ["zz", "-1", "0x5", " 5", "ffffffffffffffffff"] {
            try expectRejected("PUT /store/chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n",
                               400, on: server)
        }
        // Chunk data longer than its size.
        try expectRejected("PUT /store/chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n",
                           400, on: server)
        #expect(try server.client().get("chunk").status == 404)
    }

    /// Found by the parser fuzzer's corpus: `1 0` was read as chunk size 1,
    /// so a front end reading 0x10 would frame the stream differently.
    @Test func whitespaceInsideAChunkSizeIs400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("PUT /store/chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "1 0\r\nx\r\n0\r\n\r\n", 400, on: server)
        #expect(try server.client().get("chunk").status == 404)
    }

    /// Found by the parser fuzzer: an absolute-form target with only a
    /// query (`http://host?q`) skipped the control-byte check.
    @Test func controlBytesInAnAbsoluteFormQueryAre400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("GET http://x?a\u{0}b HTTP/1.1\r\nHost: x\r\n\r\n", 400, on: server)
        try expectRejected("GET http://x?\u{1}\u{7F} HTTP/1.1\r\nHost: x\r\n\r\n", 400, on: server)
    }

    @Test func missingHostInHTTP11Is400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("GET /healthz HTTP/1.1\r\n\r\n", 400, on: server)
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, on: server)
        // HTTP/1.0 needs no Host.
        let connection = try server.connection(timeout: 5)
        try connection.send("GET /healthz HTTP/1.0\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
    }

    @Test func negativeOrNonNumericContentLengthIs400() throws {
        let server = try TestServer()
        defer { server.stop() }
        for value in ["-5", "abc", "5a", "+5", "0x10", "", "99999999999999999999"] {
            try expectRejected("PUT /store/len HTTP/1.1\r\nHost: x\r\nContent-Length: \(value)\r\n\r\nhello", 400, on: server)
        }
        #expect(try server.client().get("len").status == 404)
    }

    @Test func bareCRAndControlBytesInHeadersAre400() throws {
        let server = try TestServer()
        defer { server.stop() }
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400, on: server)
        try expectRejected("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n", 400, on: server)
    }

    @Test func chunkedUploadWithExtensionsAndTrailerStoresExactBytes() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send("PUT /store/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
            + "5;name=value\r\nHello\r\n"
            + "1\r\n,\r\n"
            + "7 ; quoted=\"a;b\"\r\n chunky\r\n"
            + "A\r\n world!!\r\n\r\n"
            + "0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n"
            + "GET /store/chunked HTTP/1.1\r\nHost: x\r\n\r\n")
        let put = try connection.readResponse()
        #expect(put.status == 201)
        let get = try connection.readResponse()
        #expect(get.status == 200)
        #expect(get.text == "Hello, chunky world!!\r\n")
        #expect(get.header("Content-Length") == "23")
        #expect(get.header("Content-Type") == "text/plain")
    }

    @Test func chunkedUploadOfBinaryDataInManyWrites() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        let value = Bytes.random(count: 100_000, seed: 7)
        try connection.send("PUT /store/bin HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        var offset = 0
        var size = 1
        while offset < value.count {
            let n = min(size, value.count - offset)
            try connection.send(Array(String(n, radix: 16).utf8) + [13, 10] + value[offset..<(offset + n)] + [13, 10])
            offset += n
            size = size * 3 + 1
        }
        try connection.send("0\r\n\r\n")
        #expect(try connection.readResponse().status == 201)
        let get = try connection.request("GET", "/store/bin")
        #expect(get.status == 200)
        #expect(get.body == value)
    }

    @Test func contentLengthMadeOfEmptyMembersIsRejected() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 3)
        try connection.send("PUT /store/cl HTTP/1.1\r\nHost: x\r\nContent-Length: ,\r\n\r\nGET /store/zzz HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 400)
        #expect(try connection.isClosedByPeer())
        #expect(try server.client().get("cl").status == 404)
    }
}
