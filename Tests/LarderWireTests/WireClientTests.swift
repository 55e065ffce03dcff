import Foundation
import LarderHTTP
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing

/// Answers every request with what it got: `X-Method`, `X-Target`, the
/// `Authorization` and `Content-Type` it was sent, and the body back (or
/// `hello` without one). `/chunked?n=N`: N bytes of `a` in a body of
/// unknown length (chunked). `/close`: answers and closes the connection.
struct MirrorHandler: HTTPRequestHandler {
    final class Letters: HTTPBodyStream {
        private var left: Int
        init(_ count: Int) { left = count }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let n = min(left, buffer.count, 1000)
            for i in 0..<n { buffer[i] = UInt8(ascii: "a") }
            left -= n
            return n
        }
        func close() {}
    }

    static func answer(_ head: HTTPRequestHead, body: [UInt8]?) -> HTTPResponse {
        let status: HTTPStatus = switch head.method.description {
        case "PUT": .created
        case "DELETE": .noContent
        default: .ok
        }
        var response = HTTPResponse(status: status, headers: [
            ("X-Method", head.method.description), ("X-Target", head.target),
            ("X-Authorization", head.headers["Authorization"] ?? "-"), ("X-Content-Type", head.headers["Content-Type"] ?? "-"),
            ("Content-Type", "application/octet-stream"),
        ], body: status == .noContent ? .empty : .bytes(body ?? Array("hello".utf8)))
        response.closeConnection = head.path == "/close"
        return response
    }

    func handle(_ request: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
        if request.path == "/chunked" {
            let n = request.query.flatMap { Int($0.dropFirst(2)) } ?? 0
            return .answer(HTTPResponse(status: .ok, body: .unsizedStream(Letters(n))))
        }
        if request.hasBody { return .receive(CollectingBodySink(request, responder) { Self.answer($0, body: $1) }) }
        return .answer(Self.answer(request, body: nil))
    }
}

/// LarderWire's blocking client (`WireClient`, `HTTPClientConnection`),
/// which every socket-level suite talks to a server with, against a plain
/// `HTTPServer` on loopback: the requests it composes, the framings it
/// reads, keep-alive and reconnecting after the server closes.
@Suite(.blockingLane) struct WireClientTests {
    final class Server {
        let http: HTTPServer
        init() throws {
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            configuration.shutdownGrace = 1
            http = HTTPServer(configuration: configuration, handler: MirrorHandler(), logger: .silent())
            try http.start()
        }
        deinit { http.shutdown() }
        var port: Int { http.port }
    }

    @Test func itComposesTheStoreRequestsWithEncodedKeysTokenAndBasePath() throws {
        let server = try Server()
        let client = WireClient(port: server.port)
        let put = try client.put("a b/ü?#", Array("value".utf8), contentType: "text/plain")
        #expect(put.status == 201)
        #expect(put.header("X-Method") == "PUT")
        #expect(put.header("X-Target") == "/store/a%20b/%C3%BC%3F%23", "the key percent-encoded, its / kept")
        #expect(put.header("X-Content-Type") == "text/plain")
        #expect(put.text == "value", "the body went whole, framed by its Content-Length")
        #expect(put.header("X-Authorization") == "-")

        client.token = "secret"
        client.basePath = "/ns/w3"
        let get = try client.get("k")
        #expect(get.status == 200 && get.text == "hello")
        #expect(get.header("X-Target") == "/ns/w3/store/k")
        #expect(get.header("X-Authorization") == "Bearer secret")

        let head = try client.head("k")
        #expect(head.header("X-Method") == "HEAD")
        #expect(head.body.isEmpty, "a HEAD answer has no body to read")
        #expect(try client.delete("k").status == 204)
        #expect(try client.list("p/", query: "limit=2").header("X-Target") == "/ns/w3/store/p/?limit=2")
        #expect(try client.deletePrefix("").header("X-Target") == "/ns/w3/store/")
        #expect(server.http.connectionCount == 1, "every request on one keep-alive connection")
    }

    @Test func itOpensANewConnectionWhenTheServerClosesOne() throws {
        let server = try Server()
        let client = WireClient(port: server.port)
        let closing = try client.send("GET", "/close")
        #expect(closing.status == 200)
        #expect(closing.header("Connection")?.lowercased() == "close")
        try Poll.until(Poll.patience, "the server to close the connection") { server.http.connectionCount == 0 }
        let after = try client.send("GET", "/after")
        #expect(after.status == 200 && after.header("X-Target") == "/after")
        #expect(server.http.connectionCount == 1, "the new connection, kept alive")
    }

    @Test func aConnectionReadsAChunkedBodyWholeOrInPieces() throws {
        let server = try Server()
        let connection = try HTTPClientConnection(port: server.port, timeout: 10)
        let whole = try connection.request("GET", "/chunked?n=100000")
        #expect(whole.header("Transfer-Encoding")?.lowercased() == "chunked")
        #expect(whole.body.count == 100_000 && whole.body.allSatisfy { $0 == UInt8(ascii: "a") })

        try connection.send("GET /chunked?n=250000 HTTP/1.1\r\nHost: x\r\n\r\n")
        var pieces = 0, total = 0
        let streamed = try connection.readStreamingResponse { piece in pieces += 1; total += piece.count }
        #expect(streamed.status == 200 && streamed.body.isEmpty)
        #expect(total == 250_000)
        #expect(pieces >= 1)

        // The same connection still frames the next answer right.
        #expect(try connection.request("GET", "/next").header("X-Target") == "/next")
    }

    @Test func pipelinedRequestsAreReadBackInOrder() throws {
        let server = try Server()
        let connection = try HTTPClientConnection(port: server.port, timeout: 10)
        try connection.send((0..<5).map { "GET /p\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
        for i in 0..<5 { #expect(try connection.readResponse().header("X-Target") == "/p\(i)") }
    }

    @Test func aRefusedConnectionIsAClientError() throws {
        let server = try Server()
        let port = server.port
        server.http.shutdown()
        try Poll.until(Poll.patience, "the port to refuse") { (try? HTTPClientConnection(port: port, timeout: 2)) == nil }
        #expect(throws: ClientError.self) { try WireClient(port: port).get("k") }
    }
}
