import Foundation
@testable import LarderClient
import LarderApp
import LarderRouting
import LarderServer
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What only the `larderWire` transport does: keep-alive reuse, large
/// bodies through partial writes, a stale connection's request sent again
/// (only when that is safe), timeouts and cancellation without a thread.
@Suite(.asyncLane) struct WireTransportTests {
    static func client(port: Int, timeout: TimeInterval = 10) -> LarderClient {
        LarderClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: timeout, transport: .larderWire)
    }

    @Test func sequentialRequestsShareOneConnection() async throws {
        let server = try TestServer()
        let larder = Self.client(port: server.port)
        #expect(larder.transportKind == .larderWire)
        for i in 0..<50 {
            _ = try await larder.save(Data("\(i)".utf8), at: "k", contentType: "text/plain", condition: .none, ttl: nil)
            #expect(try await larder.fetch("k").data == Data("\(i)".utf8))
        }
        #expect(server.server.http.connectionCount == 1)
    }

    @Test func largeBodiesGoBothWaysWhole() async throws {
        let server = try TestServer()
        let larder = Self.client(port: server.port)
        // Random bytes: the server stores them as they are (no gzip), so
        // both ways move the full 8 MiB through partial writes and reads.
        var generator = SystemRandomNumberGenerator()
        var words = [UInt64](repeating: 0, count: 1 << 20)
        for i in words.indices { words[i] = generator.next() }
        let bytes = words.withUnsafeBytes { Data($0) }
        _ = try await larder.save(bytes, at: "big", contentType: "application/octet-stream", condition: .none, ttl: nil)
        let fetched = try await larder.fetch("big")
        #expect(fetched.data == bytes)
        #expect(try await larder.info("big").size == bytes.count)
    }

    @Test func aServerThatClosesAnIdleConnectionIsNotAnError() async throws {
        let server = try TestServer { $0.http.idleTimeout = 0.2 }
        let larder = Self.client(port: server.port)
        _ = try await larder.save(Data("v".utf8), at: "k", contentType: "text/plain", condition: .none, ttl: nil)
        try await Task.sleep(for: .milliseconds(600))
        // The pool saw the close; a create (never sent twice) still goes through.
        let created = try await larder.create(Data("x".utf8), under: "new/", contentType: "text/plain", ttl: nil)
        #expect(created.created)
        #expect(try await larder.fetch("k").data == Data("v".utf8))
    }

    /// A server that answers the first request on each connection and
    /// closes it on the second without answering (an idle close racing
    /// the request).
    @Test func aLostReadIsSentAgainAndALostWriteIsNot() async throws {
        let scripted = try ScriptedServer { connection in
            guard connection.readRequest() else { return }
            connection.write("HTTP/1.1 200 OK\r\nETag: \"1\"\r\nContent-Length: 2\r\n\r\nok")
            _ = connection.readRequest()   // then close, unanswered
        }
        let larder = Self.client(port: scripted.port)
        #expect(try await larder.fetch("a").data == Data("ok".utf8))
        #expect(try await larder.fetch("a").data == Data("ok".utf8))   // sent again on connection 2
        #expect(scripted.accepted == 2)
        // Connection 2 is closed on its second request: a POST is not sent again.
        await #expect { try await larder.create(Data("x".utf8), under: "p/", contentType: "text/plain", ttl: nil) } throws: { error in
            guard let e = error as? LarderError, case .connectionLost(_, "POST", .reset) = e else { return false }
            return e.outcomeUnknown
        }
        #expect(scripted.accepted == 2)
    }

    /// A server that resets the connection while a large body is still
    /// going out: the upload stops, and the PUT fails as never sent (the
    /// server cannot have stored a body it did not get whole).
    @Test func aResetDuringAnUploadEndsItAsNotSent() async throws {
        let scripted = try ScriptedServer { connection in
            guard connection.readRequest() else { return }
            connection.reset()
        }
        let larder = Self.client(port: scripted.port)
        let body = Data(repeating: 0x61, count: 32 << 20)
        await #expect { _ = try await larder.save(body, at: "big", contentType: "text/plain", condition: .none, ttl: nil) } throws: { error in
            guard case LarderError.unreachable(_, let reason) = error else { return false }
            return reason.contains("before the request was sent")
        }
    }

    /// `localhost` may resolve to `::1` first while the server listens on
    /// `127.0.0.1` only: the client goes on to the next address.
    @Test func localhostReachesAServerOnIPv4() async throws {
        let server = try TestServer()
        let larder = LarderClient(baseURL: URL(string: "http://localhost:\(server.port)")!, timeout: 10)
        _ = try await larder.save(Data("v".utf8), at: "k", contentType: "text/plain", condition: .none, ttl: nil)
        #expect(try await larder.fetch("k").data == Data("v".utf8))
    }

    @Test func aSilentServerTimesOut() async throws {
        let silent = try SilentListener(listening: true)
        let larder = Self.client(port: silent.port, timeout: 0.5)
        let started = ContinuousClock.now
        await #expect { try await larder.fetch("k") } throws: { error in
            guard case LarderError.unreachable(_, let reason) = error else { return false }
            return reason.contains("timed out")
        }
        // Well past 0.5 s plus the watchdog's quarter second: the watchdog's
        // timer and the connection's queue run on Dispatch's default pool,
        // which a loaded full run on two cores keeps busy (it has delayed
        // this by 10 s, and once by 33 s); without the timeout it would
        // never end.
        #expect(ContinuousClock.now - started < .seconds(120))
        withExtendedLifetime(silent) {}
    }

    @Test func cancellingAWaitingRequestEndsItAtOnce() async throws {
        let silent = try SilentListener(listening: true)
        // The request's own timeout is far beyond any stall: in a loaded full
        // run this test's task once woke from its 0.1 s sleep only after a
        // 60 s timeout had ended the request (Swift Testing's two cooperative
        // threads were held by blocking tests), so the cancel came too late.
        let larder = Self.client(port: silent.port, timeout: 900)
        let task = Task { try await larder.fetch("k") }
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        // Only tells a cancel from the 900 s timeout: the same stall may delay the await.
        #expect(ContinuousClock.now - started < .seconds(300), "the request's own timeout is 900 s")
        withExtendedLifetime(silent) {}
    }

    @Test func anHTTPSURLUsesURLSession() {
        let larder = LarderClient(baseURL: URL(string: "https://127.0.0.1:1")!)
        #expect(larder.transportKind == .urlSession)
    }
}

/// A loopback listener whose connections run `script` on a thread each,
/// for answers no real server gives.
final class ScriptedServer: @unchecked Sendable {
    final class Connection {
        let fd: Int32
        private var buffer: [UInt8] = []

        init(fd: Int32) { self.fd = fd }

        /// Reads one request head (these tests send no bodies); false at close.
        func readRequest() -> Bool {
            while true {
                if let end = buffer.indices.dropLast(3).first(where: { buffer[$0..<($0 + 4)].elementsEqual([13, 10, 13, 10]) }) {
                    // A body, if any, is read with its head (small, one piece).
                    buffer.removeAll()
                    _ = end
                    return true
                }
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if n <= 0 { return false }
                buffer += chunk[..<n]
            }
        }

        private var isClosed = false

        /// Closes with a reset (SO_LINGER 0), as a crashed server would.
        func reset() {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close()
        }

        /// Closes the connection once (the script may have already).
        func close() {
            guard !isClosed else { return }
            isClosed = true
            Glibc.close(fd)
        }

        func write(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    let port: Int
    private let fd: Int32
    private let count = Locked(0)
    /// Connections accepted so far.
    var accepted: Int { count.withLock { $0 } }

    init(script: @escaping @Sendable (Connection) -> Void) throws {
        (fd, port) = try SilentListener.loopbackSocket(backlog: 8)
        let fd = fd
        let count = count
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                count.withLock { $0 += 1 }
                Thread.detachNewThread {
                    let connection = Connection(fd: client)
                    script(connection)
                    connection.close()
                }
            }
        }
    }

    deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}
