import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM to the real binary while everything a test run leaves open is
/// open: an event stream, a parked watch, an idle keep-alive connection and
/// an upload still arriving. The upload is finished and acknowledged, the
/// waiters are let go, and the process exits 0 without waiting out the
/// shutdown grace (10 s) for any of them (how soon is a printed figure). In
/// process, a response still being sent when the stop begins does not hold
/// the stop for the whole grace period.
@Suite(.blockingLane) struct GracefulShutdownTests {
    struct Outcome {
        /// From SIGTERM to the exit, and from the upload's answer to the exit.
        var exitSeconds: Double
        var afterAnswerSeconds: Double
        var status: Int32
        var upload: ClientResponse
        var value: [UInt8]
    }

    /// Opens everything, sends SIGTERM, finishes the upload after it, and
    /// waits for the exit. Every connection is kept open by the client (the
    /// worst case: nobody hangs up first).
    static func stopWithEverythingOpen(_ child: ChildServer) throws -> Outcome {
        let port = child.port
        let client = child.client()
        let etag = try #require(try client.put("w/k", "v1").header("ETag"))

        let stream = try SSEClient(port: port, target: "/events?prefix=w/")
        #expect(try stream.readHead() == 200)
        let watch = try HTTPClientConnection(port: port, timeout: Poll.patience)
        try watch.send("GET /store/w/k?wait=300 HTTP/1.1\r\nHost: x\r\nIf-None-Match: \(etag)\r\n\r\n")
        let idle = try HTTPClientConnection(port: port, timeout: Poll.patience)
        #expect(try idle.request("GET", "/healthz").status == 200)
        let upload = try HTTPClientConnection(port: port, timeout: Poll.patience)
        let value = Bytes.random(count: 1 << 20, seed: 11)
        try upload.send("PUT /store/up/value HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let piece = 64 << 10
        func sendChunk(_ range: Range<Int>) throws {
            try upload.send(Array((String(range.count, radix: 16) + "\r\n").utf8) + Array(value[range]) + Array("\r\n".utf8))
        }
        try sendChunk(0..<piece)
        usleep(200_000)  // the watch and the stream are registered, the upload under way

        let start = DispatchTime.now().uptimeNanoseconds
        child.kill(SIGTERM)
        usleep(100_000)  // the rest of the upload comes after the signal
        var offset = piece
        while offset < value.count {
            try sendChunk(offset..<min(offset + piece, value.count))
            offset += piece
        }
        try upload.send("0\r\n\r\n")
        let answer = try upload.readResponse()
        let answered = DispatchTime.now().uptimeNanoseconds

        while child.process.isRunning && Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < Poll.patience { usleep(5_000) }
        let exited = DispatchTime.now().uptimeNanoseconds
        // The waiters were let go: each connection is closed (after any answer).
        var skipped: [SSEEvent] = []
        _ = try? stream.waitForComment("never", timeout: 1, skipped: &skipped)
        #expect(stream.ended, "the event stream was not ended")
        #expect(ProtocolWire.closedByServer(watch) || (try? watch.readResponse()) != nil, "the watch was left hanging")
        #expect(ProtocolWire.closedByServer(idle), "the idle connection was not closed")
        return Outcome(exitSeconds: Double(exited - start) / 1e9, afterAnswerSeconds: Double(exited - answered) / 1e9,
                       status: child.waitForExit(), upload: answer, value: value)
    }

    /// The stop waited for nothing it should not: a connection left to run
    /// out the shutdown grace is closed by force, which the server logs as a
    /// warning ("connections still busy after"). The times are printed.
    static func expectNoGraceWaited(_ outcome: Outcome, _ child: ChildServer, sourceLocation: SourceLocation = #_sourceLocation) {
        print(String(format: "GracefulShutdownTests: exit %.3f s after SIGTERM, %.3f s after the last answer",
                     outcome.exitSeconds, outcome.afterAnswerSeconds))
        #expect(!child.log.contains("still busy after"), "a connection was left to the end of the grace:\n\(child.log)",
                sourceLocation: sourceLocation)
    }

    @Test func sigtermOnAnEphemeralServerFinishesTheUploadAndRemovesTheData() throws {
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--no-fsync", "--log-level", "notice"])
        let dir = try #require(child.loggedDataDirectory)
        #expect(dir.contains("/larder-ephemeral-"))
        #expect(FileManager.default.fileExists(atPath: dir + "/larder.lock"))
        let outcome = try Self.stopWithEverythingOpen(child)
        #expect(outcome.upload.status == 201, "\(outcome.upload.status) \(outcome.upload.text)")
        #expect(outcome.upload.header("Connection")?.lowercased() == "close")
        #expect(outcome.status == 0, "\(child.log)")
        Self.expectNoGraceWaited(outcome, child)
        #expect(!FileManager.default.fileExists(atPath: dir), "the ephemeral data directory is still there")
    }

    @Test func anUploadAcknowledgedDuringShutdownIsCompleteAfterARestart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "notice"])  // fsync on
        let outcome = try Self.stopWithEverythingOpen(child)
        #expect(outcome.upload.status == 201)
        #expect(outcome.status == 0)
        // The answer waits for fsync, which takes what the disk takes; the
        // stop after it is Larder's part.
        Self.expectNoGraceWaited(outcome, child)

        let restarted = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "warning"])
        let read = try restarted.client().get("up/value")
        #expect(read.status == 200)
        #expect(StoreTestSupport.same(read.body, outcome.value), "the acknowledged upload is not complete after a restart")
        #expect(try restarted.client().get("w/k").text == "v1")
        restarted.kill(SIGTERM)
        #expect(restarted.waitForExit() == 0)
    }

    /// A response whose body was still being sent when the stop began (a
    /// slow reader of a large value) left a keep-alive connection behind
    /// once it was complete: nothing closed it, so the stop waited out the
    /// whole grace period (10 s by default) for an idle connection.
    @Test func aResponseStillBeingSentAtShutdownDoesNotHoldTheStopForTheGrace() throws {
        let grace = 120.0   // long: only waiting it out can come near it
        let server = try TestServer { $0.http.shutdownGrace = grace }
        defer { server.stop() }
        let big = Bytes.random(count: 8 << 20, seed: 41)   // incompressible: fills the socket buffers
        #expect(try server.client().put("big", big).status == 201)
        let connection = try server.connection(timeout: 10)
        try connection.send("GET /store/big HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(300_000)   // the answer is under way; the client has not read yet
        let http = server.server.http
        let stop = Background { http.shutdown() }
        usleep(200_000)
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(StoreTestSupport.same(response.body, big))
        try stop.wait(grace + 30)   // only a stop that hangs comes near it
        #expect(http.connectionsCutAtShutdown == 0, "the finished keep-alive connection was left to the end of the grace")
        #expect(ProtocolWire.closedByServer(connection))
    }

    /// What the tests above hold at 0 does count: a request whose body
    /// stops arriving keeps its connection busy, and the stop closes it when
    /// the grace (EchoServer's 1 s) runs out, and counts it.
    @Test func aRequestWhoseBodyNeverEndsIsCutWhenTheGraceRunsOut() throws {
        let echo = try EchoServer()
        let connection = try echo.connection()
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
        // The interim answer: the server is inside the request, waiting for its body.
        #expect(try connection.readResponse(bodyExpected: false, skipInterim: false).status == 100)
        try connection.send("abc")
        echo.server.shutdown()
        #expect(echo.server.connectionsCutAtShutdown == 1)
        #expect(ProtocolWire.closedByServer(connection), "the cut connection is still open")
    }
}
