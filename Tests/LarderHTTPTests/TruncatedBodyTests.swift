import LarderHTTP
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing

/// A client that half-closes its connection before the body it announced
/// is all in: a sink that is an `HTTPTruncatedBodySink` answers it (S3's
/// `IncompleteBody`), and the connection closes after that answer; any
/// other sink's request just ends with the connection, as before.
@Suite(.blockingLane) struct TruncatedBodyTests {
    /// Counts the body and, cut short, answers 400 saying how much came.
    final class CountingSink: HTTPTruncatedBodySink {
        private let responder: HTTPResponder
        private var count = 0
        init(_ responder: HTTPResponder) { self.responder = responder }
        func write(_ chunk: UnsafeRawBufferPointer) throws { count += chunk.count }
        func finish() { responder.respond(HTTPResponse(status: .ok, body: .bytes(Array("got \(count)".utf8)))) }
        func abort() {}
        func bodyEndedEarly() {
            var response = HTTPResponse(status: .badRequest, body: .bytes(Array("cut short after \(count)".utf8)))
            response.closeConnection = true
            responder.respond(response)
        }
    }

    struct Handler: HTTPRequestHandler {
        func handle(_ request: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
            .receive(CountingSink(responder))
        }
    }

    static func server() throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.shutdownGrace = 1
        let server = HTTPServer(configuration: configuration, handler: Handler(), logger: .silent())
        try server.start()
        return server
    }

    @Test(arguments: [
        "Content-Length: 10\r\n\r\nabcd",
        "Transfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n",
        "Transfer-Encoding: chunked\r\n\r\n8\r\nabcd",
    ])
    func aHalfCloseMidBodyIsAnsweredByTheSink(_ rest: String) throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let connection = try HTTPClientConnection(port: server.port, timeout: 5)
        defer { connection.close() }
        try connection.send("PUT /x HTTP/1.1\r\nHost: x\r\n" + rest)
        connection.shutdownWrite()
        let answer = try connection.readResponse()
        #expect(answer.status == 400)
        #expect(answer.text == "cut short after 4")
        #expect(answer.header("Connection")?.lowercased() == "close")
        #expect(try connection.isClosedByPeer())
    }

    @Test func aWholeBodyBeforeTheHalfCloseIsAnsweredAsUsual() throws {
        let server = try Self.server()
        defer { server.shutdown() }
        let connection = try HTTPClientConnection(port: server.port, timeout: 5)
        defer { connection.close() }
        try connection.send("PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd")
        connection.shutdownWrite()
        let answer = try connection.readResponse()
        #expect(answer.status == 200)
        #expect(answer.text == "got 4")
    }

    @Test func anyOtherSinksRequestEndsWithTheConnection() throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        defer { connection.close() }
        try connection.send("PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabcd")
        connection.shutdownWrite()
        #expect(throws: (any Error).self) { try connection.readResponse() }
    }
}
