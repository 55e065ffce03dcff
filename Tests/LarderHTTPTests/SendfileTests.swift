import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// Issue 9 part 3: a GET with gzip accepted sends the value file's bytes as
/// they are (with `sendfile`), and a tiny value whose gzip form is no
/// smaller is answered as identity.
@Suite(.blockingLane, .serialized) struct SendfileTests {
    static let acceptGzip = [("Accept-Encoding", "gzip")]

    static func openFDs(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// Stores `size` bytes at `key` in a child server, in 1 MiB pieces.
    static func putLarge(_ child: ChildServer, key: String, size: Int, alphabetBits: Int) throws {
        let connection = try HTTPClientConnection(port: child.port, timeout: 120)
        try connection.send("PUT /store/\(key) HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\n\r\n")
        var piece = Bytes.random(count: 1 << 20, seed: 7, alphabetBits: alphabetBits)
        for i in 0..<(size >> 20) {
            piece.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(i), as: UInt64.self) }
            try connection.send(piece)
        }
        #expect(try connection.readResponse().status == 201)
    }

    @Test func largeGzipGetIsTheFileOnDiskAndRSSStaysFlatForASlowReader() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        defer { child.kill(SIGKILL); _ = child.waitForExit() }
        let size = 64 << 20
        try Self.putLarge(child, key: "big/value", size: size, alphabetBits: 6)
        let file = try #require(S.readFile(dir + "/values/" + S.diskPath("big/value")))
        let fileCRC = Bytes.crc32(file)
        let before = try #require(child.rssKiB())

        // A small receive buffer and pauses: the server must wait for the
        // socket, not read the file ahead into memory.
        let connection = try HTTPClientConnection(port: child.port, timeout: 60, receiveBuffer: 64 * 1024)
        try connection.send("GET /store/big/value HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
        var crc: UInt32 = 0, received = 0, peak = before, pieces = 0
        let get = try connection.readStreamingResponse { piece in
            crc = Bytes.crc32(piece, crc)
            received += piece.count
            pieces += 1
            if received < 8 << 20 {
                usleep(500)
                if pieces % 16 == 0, let rss = child.rssKiB() { peak = max(peak, rss) }
            }
        }
        #expect(get.status == 200)
        #expect(get.header("Content-Encoding") == "gzip")
        #expect(get.header("Content-Length") == String(file.count))
        #expect(received == file.count)
        #expect(crc == fileCRC, "the gzip body differs from the file on disk")
        #expect(peak - before < 16 * 1024, "RSS grew from \(before) KiB to \(peak) KiB while a slow client read")
        // And it is the value: the system's zcat agrees on the size.
        let zcat = try S.run("/bin/sh", ["-c", "zcat < '\(dir)/values/big\\/value' | wc -c"])
        #expect(String(decoding: zcat.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == String(size))
    }

    @Test func aClientThatHangsUpMidTransferLeavesNoOpenFile() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        defer { child.kill(SIGKILL); _ = child.waitForExit() }
        // Random bytes: the gzip file is as large as the value, far more than socket buffers hold.
        try Self.putLarge(child, key: "noise", size: 16 << 20, alphabetBits: 8)
        let pid = child.process.processIdentifier
        // One hang-up first, unmeasured: Dispatch opens some descriptors of
        // its own lazily (timer and event descriptors for a new kind of
        // wait), and they stay. The baseline is taken after them.
        var baseline = 0
        for round in 0..<4 {
            if round == 1 {
                let deadline = Date().addingTimeInterval(10)
                var last = -1
                while Date() < deadline {
                    usleep(200_000)
                    let now = Self.openFDs(pid)
                    if now == last { break }
                    last = now
                }
                baseline = last
            }
            let connection = try HTTPClientConnection(port: child.port, timeout: 10, receiveBuffer: 64 * 1024)
            try connection.send("GET /store/noise HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
            var got = 0
            struct Enough: Error {}
            do {
                _ = try connection.readStreamingResponse { piece in
                    got += piece.count
                    if got > 1 << 20 { throw Enough() }
                }
            } catch is Enough {}
            if round > 0 { #expect(Self.openFDs(pid) > baseline, "the value file and socket are open mid-transfer") }
            connection.close()
        }
        let deadline = Date().addingTimeInterval(10)
        while Self.openFDs(pid) > baseline && Date() < deadline { usleep(20_000) }
        #expect(Self.openFDs(pid) == baseline, "descriptors left open after the clients hung up")
        // The server still answers.
        #expect(try child.client().get("noise", headers: [("Range", "bytes=0-1")]).status == 206)
    }

    @Test func rangeAndHeadOfTheGzipRepresentation() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Bytes.random(count: 2 << 20, seed: 3, alphabetBits: 5)
        #expect(try client.put("ranged", value).status == 201)
        let file = try #require(S.readFile(server.dataDirectory + "/values/" + S.diskPath("ranged")))
        let whole = try client.get("ranged", headers: Self.acceptGzip)
        #expect(whole.status == 200)
        #expect(S.same(whole.body, file))
        let part = try client.get("ranged", headers: Self.acceptGzip + [("Range", "bytes=1000-199999")])
        #expect(part.status == 206)
        #expect(part.header("Content-Encoding") == "gzip")
        #expect(part.header("Content-Range") == "bytes 1000-199999/\(file.count)")
        #expect(S.same(part.body, Array(file[1000...199999])))
        let suffix = try client.get("ranged", headers: Self.acceptGzip + [("Range", "bytes=-100")])
        #expect(suffix.status == 206)
        #expect(S.same(suffix.body, Array(file[(file.count - 100)...])))
        let unsatisfiable = try client.get("ranged", headers: Self.acceptGzip + [("Range", "bytes=\(file.count)-")])
        #expect(unsatisfiable.status == 416)
        #expect(unsatisfiable.header("Content-Range") == "bytes */\(file.count)")
        let head = try client.head("ranged", headers: Self.acceptGzip)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(file.count))
        #expect(head.header("Content-Encoding") == "gzip")
        #expect(head.body.isEmpty)

        // A body stored as sent: the client's own header comes from memory,
        // the rest from the file; ranges across the seam.
        let gz = S.gzip(value, level: 1, name: "value.bin", comment: "kept as sent")
        #expect(try client.put("kept", gz, headers: [("Content-Encoding", "gzip")]).status == 201)
        #expect(S.same(try client.get("kept", headers: Self.acceptGzip).body, gz))
        for (a, b) in [(0, 3), (5, 70_000), (30, gz.count - 1), (gz.count - 10, gz.count - 1)] {
            let r = try client.get("kept", headers: Self.acceptGzip + [("Range", "bytes=\(a)-\(b)")])
            #expect(r.status == 206)
            #expect(S.same(r.body, Array(gz[a...b])), "range \(a)-\(b)")
        }
        // If-Range with the gzip ETag: the range; with identity's: the whole gzip form.
        let etag = try #require(whole.header("ETag"))
        #expect(etag.hasSuffix("-gz\""))
        #expect(try client.get("ranged", headers: Self.acceptGzip + [("Range", "bytes=0-9"), ("If-Range", etag)]).status == 206)
        let notModified = try client.get("ranged", headers: Self.acceptGzip + [("If-None-Match", etag)])
        #expect(notModified.status == 304)
        #expect(notModified.header("ETag") == etag)
    }

    @Test func aTinyValueWithGzipAcceptedComesBackAsIdentity() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let put = try client.put("tiny", "hello")
        let etag = try #require(put.header("ETag"))
        let get = try client.get("tiny", headers: Self.acceptGzip)
        #expect(get.status == 200)
        #expect(get.text == "hello")
        #expect(get.header("Content-Encoding") == nil)
        #expect(get.header("Content-Length") == "5")
        #expect(get.header("Vary")?.lowercased().contains("accept-encoding") == true)
        #expect(get.header("ETag") == etag)
        let range = try client.get("tiny", headers: Self.acceptGzip + [("Range", "bytes=1-2")])
        #expect(range.status == 206)
        #expect(range.text == "el")
        #expect(range.header("Content-Range") == "bytes 1-2/5")
        #expect(try client.get("tiny", headers: Self.acceptGzip + [("Range", "bytes=0-0"), ("If-Range", etag)]).status == 206)
        let head = try client.head("tiny", headers: Self.acceptGzip)
        #expect(head.header("Content-Length") == "5")
        #expect(head.header("Content-Encoding") == nil)
        #expect(head.header("Vary")?.lowercased().contains("accept-encoding") == true)
        let notModified = try client.get("tiny", headers: Self.acceptGzip + [("If-None-Match", etag)])
        #expect(notModified.status == 304)
        #expect(notModified.header("ETag") == etag)
        #expect(notModified.header("Vary")?.lowercased().contains("accept-encoding") == true)
        // A compressible value of the same kind (above the size the disk store
        // keeps as one stored block) still goes out as gzip.
        #expect(try client.put("text", String(repeating: "larder ", count: 1000)).status == 201)
        let text = try client.get("text", headers: Self.acceptGzip)
        #expect(text.header("Content-Encoding") == "gzip")
        #expect(S.gunzip(text.body).map { String(decoding: $0, as: UTF8.self) } == String(repeating: "larder ", count: 1000))
    }

    @Test func pipelinedRequestsAfterASendfileBodyAreAnsweredInOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let big = Bytes.random(count: 3 << 20, seed: 99, alphabetBits: 7)
        #expect(try client.put("big", big).status == 201)
        #expect(try client.put("small", "tiny").status == 201)
        let file = try #require(S.readFile(server.dataDirectory + "/values/" + S.diskPath("big")))
        let connection = try server.connection(timeout: 10)
        let gz = "Accept-Encoding: gzip\r\n"
        try connection.send("GET /store/big HTTP/1.1\r\nHost: x\r\n\(gz)\r\n"
            + "GET /store/small HTTP/1.1\r\nHost: x\r\n\(gz)\r\n"
            + "HEAD /store/big HTTP/1.1\r\nHost: x\r\n\(gz)\r\n"
            + "GET /store/big HTTP/1.1\r\nHost: x\r\n\(gz)Range: bytes=10-99\r\n\r\n"
            + "GET /store/big HTTP/1.1\r\nHost: x\r\n\(gz)\r\n"
            + "GET /store/small HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try connection.readResponse()
        #expect(first.status == 200)
        #expect(S.same(first.body, file))
        #expect(try connection.readResponse().text == "tiny")
        let head = try connection.readResponse(bodyExpected: false)
        #expect(head.header("Content-Length") == String(file.count))
        let ranged = try connection.readResponse()
        #expect(ranged.status == 206)
        #expect(S.same(ranged.body, Array(file[10...99])))
        #expect(S.same(try connection.readResponse().body, file))
        #expect(try connection.readResponse().text == "tiny")
        #expect(ProtocolWire.staysOpen(connection))
    }
}
