import Foundation
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Defects found in review, each held down by a test that fails without its fix.
@Suite struct ReviewRegressionTests {
    typealias S = StoreTestSupport

    @Test func pipelinedGetsOfALargeValueDoNotPileUpInMemory() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        let value = [UInt8](repeating: 0, count: 1 << 20)   // 1 MiB, a tiny gzip file
        #expect(try child.client().put("zeros", value).status == 201)
        let connection = try HTTPClientConnection(port: child.port, timeout: 60)
        let count = 300
        try connection.send(String(repeating: "GET /store/zeros HTTP/1.1\r\nHost: x\r\n\r\n", count: count))
        usleep(500_000)   // the server answers while nobody reads
        for i in 0..<count {
            let response = try connection.readStreamingResponse { _ in }
            #expect(response.status == 200, "response \(i)")
        }
        // 300 answers of 1 MiB held at once would be 300 MiB.
        let peak = try #require(child.peakRSSKiB())
        #expect(peak < 96 * 1024, "peak RSS \(peak) KiB")
    }

    @Test func gzipUploadWhoseHeaderCannotBeKeptIsRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = S.gzip(Array("value".utf8), name: String(repeating: "n", count: 65_500))
        let put = try server.client().put("big-header", body, headers: [("Content-Encoding", "gzip")])
        #expect(put.status == 400)
        #expect(put.json?["error"] as? String == "invalid_gzip")
        #expect(try server.client().get("big-header").status == 404)
    }

    @Test func resetNeverReusesALeftoverGenerationQueuedForDeletion() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A crash inside a reset left an empty gen-2 beside the live gen-1.
        var first: TestServer? = try TestServer(dataDirectory: dir)
        try first!.client().put("old", "1")
        first!.stop(keepData: true)
        first = nil
        try FileManager.default.createDirectory(atPath: dir + "/gen-2", withIntermediateDirectories: false)
        // Ahead of it in the reaper's queue, a big leftover keeps gen-2 around
        // while the reset below runs.
        try FileManager.default.createDirectory(atPath: dir + "/gen-10", withIntermediateDirectories: false)
        for i in 0..<3000 { FileManager.default.createFile(atPath: dir + "/gen-10/f\(i)", contents: nil) }

        let server = try TestServer(dataDirectory: dir)
        let client = server.client()
        #expect(try client.deletePrefix("").json?["deleted"] as? Int == 1)
        #expect(try client.put("new", "2").status == 201)
        server.diskStore?.drainBackgroundWork()
        #expect(try client.get("new").text == "2")
        server.stop(keepData: true)
        let again = try TestServer(dataDirectory: dir)
        defer { again.stop() }
        #expect(try again.client().get("new").text == "2")
        #expect(try again.client().get("old").status == 404)
    }

    @Test func leadingBlankLinesCannotPinTheServer() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 5)
        try connection.send(String(repeating: "\n", count: 60_000) + "GET /abc")
        try? connection.send(String(repeating: "x", count: 9_000))
        let response = try connection.readResponse()
        #expect(response.status == 414)
        #expect(try server.client().send("GET", "/healthz").status == 200)
    }

    @Test func answeredRequestWithAStalledBodyGetsNoStray408() throws {
        let server = try TestServer { $0.http.idleTimeout = 0.6; $0.http.headerTimeout = 0.6 }
        defer { server.stop() }
        let connection = try server.connection(timeout: 3)
        try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        #expect(try connection.readResponse().status == 200)
        // The rest of the body never comes: the connection closes, with no second answer.
        #expect(try connection.isClosedByPeer())
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

    @Test func gzipBodyThatInflatesPastTheValueLimitGets413() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1 << 20 }
        defer { server.stop() }
        let bomb = S.gzip([UInt8](repeating: 0, count: 2 << 20))   // ~2 KiB of gzip
        #expect(bomb.count < 1 << 20)
        let put = try server.client().put("bomb", bomb, headers: [("Content-Encoding", "gzip")])
        #expect(put.status == 413)
        #expect(try server.client().get("bomb").status == 404)
    }

    @Test func acceptEncodingOnSeparateHeaderLinesIsCombined() throws {
        let server = try TestServer()
        defer { server.stop() }
        // Long and repetitive, so gzip is smaller and is sent when accepted.
        let value = String(repeating: "value ", count: 100)
        try server.client().put("k", value)
        let response = try server.client().get("k", headers: [("Accept-Encoding", "br"), ("Accept-Encoding", "gzip")])
        #expect(response.header("Content-Encoding") == "gzip")
        #expect(S.gunzip(response.body) == Array(value.utf8))
    }

    @Test func versionCeilingOnDiskIsAboveEveryETagIssued() throws {
        let server = try TestServer()
        defer { server.stop() }
        let etag = try #require(try server.client().put("k", "v").header("ETag"))
        let version = try #require(UInt64(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")), radix: 16))
        let text = try String(contentsOfFile: server.dataDirectory + "/version", encoding: .utf8)
        let ceiling = try #require(UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(ceiling > version)
    }

    @Test func nonsenseTimeoutsAreRefusedAtStart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--idle-timeout=-1"], waitUntilListening: false)
        #expect(child.waitForExit() != 0)
        #expect(child.log.contains("--idle-timeout must be more than 0"), "\(child.log)")
    }
}

/// Defects found in the second review.
@Suite struct SecondReviewRegressionTests {
    @Test func clientThatStopsReadingIsClosedEvenIfItSentMoreBytes() throws {
        let server = try TestServer { $0.http.idleTimeout = 0.5 }
        defer { server.stop() }
        // Incompressible, larger than the loopback socket buffers.
        let value = Bytes.random(count: 12 << 20, seed: 3)
        #expect(try server.client().put("big", value).status == 201)
        let stalled = try server.connection()
        try stalled.send("GET /store/big HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(200_000)
        try stalled.send("G")   // a pipelined byte the server cannot read while blocked
        let deadline = Date().addingTimeInterval(5)
        while server.server.http.connectionCount > 0 && Date() < deadline { usleep(50_000) }
        #expect(server.server.http.connectionCount == 0, "the stalled connection is still open")
    }

    @Test func anEmptyVersionFileDoesNotStopTheServer() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try TestServer(dataDirectory: dir)
        try first.client().put("k", "v")
        first.stop(keepData: true)
        FileManager.default.createFile(atPath: dir + "/version", contents: Data())
        let second = try TestServer(dataDirectory: dir)
        defer { second.stop() }
        #expect(try second.client().get("k").text == "v")
        #expect(try second.client().put("k", "w").status == 204)
    }

    @Test func versionsAfterACleanRestartFollowTheClock() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func version(_ response: ClientResponse) throws -> UInt64 {
            let etag = try #require(response.header("ETag"))
            return try #require(UInt64(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")), radix: 16))
        }
        let first = try TestServer(dataDirectory: dir)
        let before = try version(first.client().put("k", "1"))
        first.stop(keepData: true)
        let second = try TestServer(dataDirectory: dir)
        defer { second.stop() }
        let after = try version(second.client().put("k", "2"))
        #expect(after > before)
        // Not an hour ahead: within a minute of the first write.
        #expect(after - before < 60_000_000_000)
    }

    @Test func hugeHeadLimitsAreRefusedAtStart() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--max-header-bytes", "9223372036854775000"],
                                    waitUntilListening: false)
        #expect(child.waitForExit() != 0)
        #expect(child.log.contains("--max-header-bytes must be from 1 to"), "\(child.log)")
    }
}

/// A reader that keeps reading, however slowly, is not idle.
@Suite struct SlowReaderTests {
    @Test func slowButSteadyReaderGetsTheWholeValue() throws {
        let server = try TestServer { $0.http.idleTimeout = 0.5 }
        defer { server.stop() }
        let value = Bytes.random(count: 6 << 20, seed: 11)
        #expect(try server.client().put("big", value).status == 201)
        let connection = try server.connection(timeout: 10)
        try connection.send("GET /store/big HTTP/1.1\r\nHost: x\r\n\r\n")
        var received = 0
        var pace = Date()
        // About 2 MB/s: the kernel's send buffer drains for longer than the
        // idle timeout between two writable events.
        let response = try connection.readStreamingResponse { piece in
            received += piece.count
            pace = pace.addingTimeInterval(Double(piece.count) / 2e6)
            let wait = pace.timeIntervalSinceNow
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
        }
        #expect(response.status == 200)
        #expect(received == value.count)
    }
}
