import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `GET /events` framed by close (`Connection: close`, still chunked; or
/// HTTP/1.0, framed by the close itself) is timed like a keep-alive stream:
/// heartbeats keep it open past the idle timeout, and a shutdown ends it at
/// once.
@Suite(.blockingLane) struct EventStreamFramingTests {
    /// The shutdown grace of the shutdown tests: so long that a stream cut
    /// at its end (`connectionsCutAtShutdown`) was left open, not slow.
    static let longGrace = 120.0

    /// Reads whatever arrives on `fd` for `seconds`, then on until `enough`
    /// holds for what came (at most `patience` more), or until the peer
    /// closes: the bytes, and whether the server closed the connection.
    static func collect(_ fd: Int32, for seconds: Double, until enough: ([UInt8]) -> Bool = { _ in true },
                        patience: Double = Poll.patience) -> (bytes: [UInt8], closed: Bool) {
        let start = Date()
        var out: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 65536)
        while true {
            let elapsed = Date().timeIntervalSince(start)
            if elapsed >= seconds && (enough(out) || elapsed >= seconds + patience) { return (out, false) }
            let left = elapsed < seconds ? seconds - elapsed : 0.05
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(1, left * 1000)))
            if ready < 0 { if errno == EINTR { continue }; return (out, true) }
            if ready == 0 { continue }
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { out += scratch[0..<n]; continue }
            if n == 0 { return (out, true) }
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
            return (out, true)
        }
    }

    static func occurrences(of needle: String, in bytes: [UInt8]) -> Int {
        String(decoding: bytes, as: UTF8.self).components(separatedBy: needle).count - 1
    }

    /// `GET /events` framed by close (`Connection: close`, or HTTP/1.0), open once the server counts it.
    static func openCloseFramedStream(_ server: TestServer, _ framing: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws -> HTTPClientConnection {
        let connection = try server.connection(timeout: 10)
        if framing == "HTTP/1.0" {
            try connection.send("GET /events HTTP/1.0\r\nHost: localhost\r\n\r\n")
        } else {
            try connection.send("GET /events HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        }
        #expect(Poll.holds(within: Poll.patience) { server.server.eventStreamCount == 1 }, "\(framing): the stream never opened",
                sourceLocation: sourceLocation)
        return connection
    }

    /// An event stream that ends with its connection (`Connection: close`,
    /// still chunked; or HTTP/1.0, framed by the close) is timed like a
    /// keep-alive one: heartbeats keep it open past the idle timeout. Before: closed after the idle timeout, and
    /// shutdown waited the whole grace (10 s) for it.
    @Test(arguments: ["Connection: close", "HTTP/1.0"])
    func closeFramedEventStreamStaysOpenAndEndsAtShutdown(_ framing: String) throws {
        let server = try TestServer {
            $0.http.idleTimeout = 1
            $0.eventHeartbeat = 0.3
            $0.http.shutdownGrace = Self.longGrace
        }
        defer { server.stop() }
        let connection = try Self.openCloseFramedStream(server, framing)

        let early = Self.collect(connection.fd, for: 1.5)
        let head = String(decoding: early.bytes, as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200") || head.hasPrefix("HTTP/1.0 200"), "\(framing): \(head.prefix(200))")
        #expect(head.lowercased().contains("content-type: text/event-stream"), "\(framing): \(head.prefix(300))")
        if framing == "HTTP/1.0" {
            #expect(!head.lowercased().contains("transfer-encoding"), "HTTP/1.0: the stream must be framed by close")
        }
        #expect(!early.closed, "\(framing): the stream was closed after \(String(format: "%.1f", 1.5)) s or less (idle timeout 1 s)")
        // Past the idle timeout, heartbeats keep coming (3 of them: however
        // late a loaded machine sends them) and the stream stays open.
        let late = Self.collect(connection.fd, for: 1.5) { Self.occurrences(of: ": keep-alive", in: $0) >= 3 }
        #expect(!late.closed, "\(framing): the stream was closed before 3 s (idle timeout 1 s, heartbeat 0.3 s)")
        let lateBeats = Self.occurrences(of: ": keep-alive", in: late.bytes)
        #expect(lateBeats >= 3, "\(framing): \(lateBeats) heartbeats after the idle timeout")
        #expect(server.server.eventStreamCount == 1)

        // Graceful shutdown with the stream still open: it ends, not waits out the grace.
        server.stop()
        #expect(server.server.http.connectionsCutAtShutdown == 0,
                "\(framing): the open close-framed event stream was left to the end of the shutdown grace")
        #expect(Self.collect(connection.fd, for: 0, until: { _ in false }).closed, "\(framing): the stream was not closed by the shutdown")
    }

    /// Shutdown with a close-framed stream open and the default idle
    /// timeout: the stream ends at once. Before: the server waited out the
    /// whole shutdown grace (10 s) for it.
    @Test(arguments: ["Connection: close", "HTTP/1.0"])
    func shutdownEndsACloseFramedEventStream(_ framing: String) throws {
        let server = try TestServer {
            $0.eventHeartbeat = 0.3
            $0.http.shutdownGrace = Self.longGrace
        }
        defer { server.stop() }
        let connection = try Self.openCloseFramedStream(server, framing)
        let early = Self.collect(connection.fd, for: 0.5)
        #expect(!early.closed && String(decoding: early.bytes, as: UTF8.self).contains(" 200 "), "\(framing): no open stream")

        server.stop()
        #expect(server.server.http.connectionsCutAtShutdown == 0,
                "\(framing): the open close-framed event stream was left to the end of the shutdown grace")
        #expect(Self.collect(connection.fd, for: 0, until: { _ in false }).closed, "\(framing): the stream was not closed by the shutdown")
    }
}
