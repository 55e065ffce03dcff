import Dispatch
import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// Defects found in the review of the fixture layer, snapshots, faults, the
/// runner's shutdown and the expiry change; each test fails without its fix.
@Suite(.serialized) struct SidecarReviewRegressionTests {
    static func seconds(since start: UInt64) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    // MARK: - Shutdown

    /// A response whose body was still being sent when the stop began (a
    /// slow reader of a large value) left a keep-alive connection behind
    /// once it was complete: nothing closed it, so the stop waited out the
    /// whole grace period (10 s by default) for an idle connection.
    @Test func aResponseStillBeingSentAtShutdownDoesNotHoldTheStopForTheGrace() throws {
        let server = try TestServer { $0.http.shutdownGrace = 6 }
        defer { server.stop() }
        let big = Bytes.random(count: 8 << 20, seed: 41)   // incompressible: fills the socket buffers
        #expect(try server.client().put("big", big).status == 201)
        let connection = try server.connection(timeout: 10)
        try connection.send("GET /store/big HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(300_000)   // the answer is under way; the client has not read yet
        let http = server.server.http
        let stop = Background { () -> Double in
            let start = DispatchTime.now().uptimeNanoseconds
            http.shutdown()
            return Self.seconds(since: start)
        }
        usleep(200_000)
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(S.same(response.body, big))
        let took = try stop.wait(15)
        #expect(took < 2, "the stop took \(took) s: the finished keep-alive connection waited for the grace")
        #expect(ProtocolWire.closedByServer(connection, within: 1))
    }

    // MARK: - Faults

    /// A watch whose change came during a delay longer than the rest of its
    /// wait: at the watch's deadline the connection took the deadline answer
    /// (304) and ran the cancel handlers, which dropped the held 200. The
    /// client was told "not modified" about a value that had changed.
    @Test func aDelayedWatchAnswerIsNotReplacedByTheWatchDeadline() throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        let client = server.client()
        let etag = try #require(try client.put("watched/k", "v1").header("ETag"))
        let rules = try client.send("PUT", "/faults",
                                    body: Array(#"[{"id":"late","prefix":"watched/","methods":["GET"],"delayMs":1500}]"#.utf8))
        #expect(rules.status == 200)
        let port = server.port
        let watcher = Background { () -> ClientResponse in
            let connection = try HTTPClientConnection(port: port, timeout: 15)
            return try connection.request("GET", "/store/watched/k?wait=1", headers: [("If-None-Match", etag)])
        }
        #expect(WatchTests.waitForWatchers(server, 1))
        #expect(try client.put("watched/k", "v2").status == 204)
        let woken = try watcher.wait(10)
        #expect(woken.status == 200, "the change was answered \(woken.status)")
        #expect(woken.text == "v2")
        #expect(woken.header("Larder-Fault") == "late")
    }

    /// An error found while the body was read (a snapshot line that is not
    /// valid, a chunked body over the limit) was sent by the connection
    /// directly, past the middleware: an answer a fault rule had touched
    /// came without `Larder-Fault` (and no middleware saw it at all).
    @Test func anErrorFoundInTheBodyPassesThroughTheMiddleware() throws {
        let server = try TestServer {
            $0.allowFaults = true
            $0.http.maxBodyBytes = 1000
        }
        defer { server.stop() }
        let client = server.client()
        let rules = try client.send("PUT", "/faults",
                                    body: Array(#"[{"id":"mark-store","prefix":"big/"},{"id":"mark-snapshot","prefix":"/snapshot"}]"#.utf8))
        #expect(rules.status == 200)

        let snapshot = try server.connection(timeout: 10)
        let document = #"{"key":"a","json":1}"# + "\nnot a line\n" + #"{"key":"b","json":2}"# + "\n"
        let restored = try snapshot.request("POST", "/snapshot", body: Array(document.utf8))
        ProtocolWire.expectError(restored, 400, "invalid_snapshot")
        #expect(restored.header("Larder-Fault") == "mark-snapshot")

        let upload = try server.connection(timeout: 10)
        try upload.send("PUT /store/big/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + String(2000, radix: 16) + "\r\n" + String(repeating: "x", count: 2000) + "\r\n0\r\n\r\n")
        let tooLarge = try upload.readResponse()
        ProtocolWire.expectError(tooLarge, 413, "payload_too_large")
        #expect(tooLarge.header("Larder-Fault") == "mark-store")
        ProtocolWire.expectCloses(tooLarge, upload)

        // Held back by a delay like any answer, then the connection closes.
        #expect(try client.send("POST", "/faults", body: Array(#"{"id":"slow","prefix":"slow/","delayMs":300}"#.utf8)).status == 200)
        let slow = try server.connection(timeout: 10)
        let start = DispatchTime.now().uptimeNanoseconds
        try slow.send("PUT /store/slow/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      + String(2000, radix: 16) + "\r\n" + String(repeating: "x", count: 2000) + "\r\n0\r\n\r\n")
        let late = try slow.readResponse()
        ProtocolWire.expectError(late, 413, "payload_too_large")
        #expect(late.header("Larder-Fault") == "slow")
        #expect(Self.seconds(since: start) >= 0.3)
        ProtocolWire.expectCloses(late, slow)

        // A body that stalls: its 408 too.
        let quick = try TestServer {
            $0.allowFaults = true
            $0.http.idleTimeout = 0.5
        }
        defer { quick.stop() }
        #expect(try quick.client().send("PUT", "/faults", body: Array(#"[{"id":"mark","prefix":"stall/"}]"#.utf8)).status == 200)
        let stalled = try quick.connection(timeout: 10)
        try stalled.send("PUT /store/stall/k HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        let timedOut = try stalled.readResponse()
        ProtocolWire.expectError(timedOut, 408, "request_timeout")
        #expect(timedOut.header("Larder-Fault") == "mark")
    }

    // MARK: - The runner

    /// The stop signals are blocked from the first instruction so that the
    /// server takes them with `sigwait`; `larder healthcheck` inherited the
    /// mask and waits for no signal, so Ctrl-C or a supervisor's SIGTERM did
    /// nothing: it ran on until its own `--timeout` (SIGALRM).
    @Test func healthcheckStopsOnSIGTERMAndSIGINT() throws {
        // A listening socket that is never accepted: the check waits for an answer.
        let listener = try SilentListener()
        let port = listener.port
        for signal in [SIGTERM, SIGINT] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ChildServer.binaryPath)
            process.arguments = ["healthcheck", "--url", "http://127.0.0.1:\(port)/healthz", "--timeout", "30"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(500_000)   // connected, waiting for the answer
            let sent = DispatchTime.now().uptimeNanoseconds
            kill(process.processIdentifier, signal)
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            let took = Self.seconds(since: sent)
            if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
            #expect(took < 2, "signal \(signal): the healthcheck ran on for \(took) s")
            #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == signal,
                    "signal \(signal): ended by \(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus)")
        }
    }

    // MARK: - Snapshots

    /// A snapshot line may carry any `expires` (a PUT's `?ttl` is held to
    /// 100 years): one at the end of the 64-bit nanosecond range crashed the
    /// server, in the ISO 8601 parser (adding the fraction overflowed) or
    /// at the next GET of the key (rounding the `Larder-Expires` date up
    /// overflowed).
    @Test func anExpiryAtTheEndOfTheRangeDoesNotCrashTheServer() throws {
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--no-fsync", "--log-level", "error"])
        defer { child.kill(SIGKILL); _ = child.waitForExit() }
        let client = child.client()
        // 2262-04-11T23:47:16Z is the last whole second of Int64 nanoseconds.
        let past = try client.send("POST", "/snapshot",
                                   body: Array(#"{"key":"over","expires":"2262-04-11T23:47:16.999999999Z","text":"v"}"#.utf8))
        ProtocolWire.expectError(past, 400, "invalid_snapshot")
        let restored = try client.send("POST", "/snapshot",
                                       body: Array(#"{"key":"last","expires":"2262-04-11T23:47:16.5Z","text":"v"}"#.utf8))
        #expect(restored.status == 200, "\(restored.status) \(restored.text)")
        let value = try client.get("last")
        #expect(value.status == 200)
        #expect(value.header("Larder-Expires") == "Fri, 11 Apr 2262 23:47:17 GMT")
        #expect(try client.send("GET", "/store/").status == 200)
        #expect(try client.send("GET", "/snapshot").status == 200)
    }
}
