import Foundation
import LarderHTTP
import LarderModel
import LarderSupport
import LarderTestSupport
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// A response body that gives `good` bytes, then fails: a snapshot whose
/// store read breaks after its head is out.
final class FailingStream: HTTPBodyStream {
    struct Broken: Error, CustomStringConvertible { var description: String { "the disk went away" } }
    private var left: Int
    init(good: Int) { left = good }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard left > 0 else { throw Broken() }
        let n = min(left, buffer.count)
        for i in 0..<n { buffer[i] = UInt8(ascii: "a") }
        left -= n
        return n
    }
    func close() {}
}

/// `/echo`: answers with the method, target and body it got. `/fail`: 418.
/// `/unsized-fails` and `/sized-fails`: a body stream that breaks after
/// 10 bytes, of unknown length or promised as 100 bytes.
struct EchoHandler: HTTPRequestHandler {
    static func answer(_ head: HTTPRequestHead, body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: .ok, headers: [("Content-Type", "application/octet-stream"),
                                            ("X-Method", head.method.description),
                                            ("X-Target", head.target),
                                            ("X-Chunked", head.isChunked ? "1" : "0")],
                     body: .bytes(body))
    }

    func handle(_ request: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
        switch request.path {
        case "/fail":
            responder.respond(HTTPError(HTTPStatus(418, "I'm a teapot"), ErrorCode("teapot"), "no").response)
            return .ignore
        case "/unsized-fails":
            responder.respond(HTTPResponse(status: .ok, body: .unsizedStream(FailingStream(good: 10))))
            return .ignore
        case "/sized-fails":
            responder.respond(HTTPResponse(status: .ok, body: .stream(FailingStream(good: 10), length: 100)))
            return .ignore
        default:
            if request.hasBody { return .receive(CollectingBodySink(request, responder) { Self.answer($0, body: $1) }) }
            responder.respond(Self.answer(request, body: []))
            return .ignore
        }
    }
}

/// An `HTTPServer` with `EchoHandler` on an ephemeral loopback port.
final class EchoServer {
    let server: HTTPServer
    init(logger: Logger = .silent(), _ configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.shutdownGrace = 1
        configure(&configuration)
        server = HTTPServer(configuration: configuration, handler: EchoHandler(), logger: logger)
        try server.start()
    }
    func connection() throws -> HTTPClientConnection { try HTTPClientConnection(port: server.port, timeout: 5) }

    /// The status of the one answer to `request` sent raw on a new connection.
    func status(of request: String) throws -> Int {
        let connection = try connection()
        try connection.send(request)
        return try connection.readResponse().status
    }
    deinit { server.shutdown() }
}

/// A log file a test's server writes to, read back whole.
final class CapturedLog {
    let path: String
    let fd: Int32
    init() {
        path = NSTemporaryDirectory() + "larder-http-log-\(UUID().uuidString)"
        fd = open(path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
    }
    var logger: Logger { let fd = self.fd; return Logger(label: "test") { LarderLogHandler(label: $0, level: .info, fd: fd) } }
    var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    deinit {
        close(fd)
        unlink(path)
    }
}
