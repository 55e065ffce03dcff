import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// docs/reliability.md: what a full disk, a read-only data directory and a
/// damaged value file do. Real filesystems (a small tmpfs mounted for the
/// test), the real server, real sockets; no injected failures.
@Suite(.blockingLane, .enabled(if: SmallFilesystem.isAvailable, "needs tmpfs mounts (root with mount permission)"))
struct DiskFaultTests {
    static func expectError(_ response: ClientResponse, _ status: Int, _ code: String, _ what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "\(what): \(response.status) \(String(decoding: response.body, as: UTF8.self))",
                sourceLocation: sourceLocation)
        let body = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        #expect(body?["error"] as? String == code, "\(what): \(String(decoding: response.body, as: UTF8.self))",
                sourceLocation: sourceLocation)
    }

    /// Temp files (`\t…`) anywhere under the store's values.
    static func tempFiles(_ dataDirectory: String) -> [String] {
        S.regularFiles(under: dataDirectory + "/values").filter { $0.split(separator: "/").last?.hasPrefix("\\t") ?? false }
    }

    @Test func aFullDiskAnswers507AndKeepsTheOldValue() throws {
        let fs = try SmallFilesystem(bytes: 4 << 20)
        defer { fs.unmount() }
        let server = try TestServer(dataDirectory: fs.path + "/data") { $0.store.fsync = true }
        defer { server.stop() }
        let client = server.client()
        let old = Bytes.random(count: 200_000, seed: 1)
        #expect(try S.put(client, key: "keep/me", old).status == 201)
        // Random bytes are stored as they are: 6 MiB cannot fit in 4.
        let big = Bytes.random(count: 6 << 20, seed: 2)
        Self.expectError(try server.client().put("big", big), 507, "insufficient_storage", "a new value larger than the disk")
        Self.expectError(try server.client().put("keep/me", big), 507, "insufficient_storage", "a replacement that does not fit")
        let kept = try S.get(server.client(), key: "keep/me")
        #expect(kept.status == 200 && S.same(kept.body, old), "the old value is intact and readable")
        #expect(try server.client().get("big").status == 404)
        #expect(Self.tempFiles(server.dataDirectory).isEmpty, "a failed write leaves no temp file")
        // The space of the failed writes is free again: the store goes on.
        for i in 0..<20 {
            #expect(try S.put(server.client(), key: "after/\(i)", Bytes.random(count: 100_000, seed: UInt64(10 + i))).status == 201)
        }
        #expect(try S.get(server.client(), key: "after/19").body == Bytes.random(count: 100_000, seed: 29))
        #expect(try server.client().send("GET", "/healthz").status == 200)
    }

    @Test func aReadOnlyDataDirectoryIsAClearStartUpError() throws {
        let fs = try SmallFilesystem(bytes: 4 << 20)
        defer { fs.unmount() }
        let dir = fs.path + "/data"
        // A store made earlier, then the volume becomes read-only.
        let first = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync"])
        #expect(try first.client().put("a", "1").status == 201)
        first.kill(SIGTERM)
        _ = first.waitForExit()
        try fs.remountReadOnly()
        for directory in [dir, fs.path + "/never-made"] {
            let child = try ChildServer(dataDirectory: directory, arguments: ["--no-fsync"], waitUntilListening: false)
            let status = child.waitForExit()
            #expect(status != 0, "larder must not start on \(directory)")
            #expect(child.log.contains("Read-only file system"), "the error names the cause: \(child.log)")
            #expect(child.log.contains(directory), "the error names the directory: \(child.log)")
            #expect(!child.log.contains("Fatal error"), "a clear error, not a crash: \(child.log)")
        }
    }

    @Test func aTruncatedValueFileIsAnErrorNeverData() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let small = Array(String(repeating: "small value, compressible; ", count: 400).utf8)
        let large = Bytes.jsonRecords(3 << 20)
        do {
            let first = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync"])
            for (key, value) in [("t/small", small), ("t/large", large), ("t/flipped", large), ("t/other", small)] {
                #expect(try S.put(first.client(), key: key, value).status == 201)
            }
            first.kill(SIGTERM)
            _ = first.waitForExit()
        }
        for key in ["t/small", "t/large"] {
            let path = dir + "/values/" + S.diskPath(key)
            let size = try #require(S.readFile(path)).count
            #expect(truncate(path, off_t(size / 2)) == 0)
        }
        // One byte changed in the middle of the deflate data: the size is right.
        let flippedPath = dir + "/values/" + S.diskPath("t/flipped")
        var flipped = try #require(S.readFile(flippedPath))
        flipped[flipped.count / 2] ^= 0x5A
        try Data(flipped).write(to: URL(fileURLWithPath: flippedPath))
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync"])
        defer { child.kill(SIGKILL); _ = child.waitForExit() }
        // Checked before the status line goes out (the gzip trailer's size),
        // so even a value that would stream, or go out as stored, is a 500.
        for key in ["t/small", "t/large"] {
            for headers in [[], [("Accept-Encoding", "gzip")]] as [[(String, String)]] {
                Self.expectError(try child.client().get(key, headers: headers), 500, "internal_error", "GET \(key) \(headers)")
            }
        }
        // Damage inside the data shows only while inflating, when the status
        // may be out: the body then stops short and the connection closes,
        // so a client never takes it for the whole value.
        do {
            let response = try child.client().get("t/flipped")
            #expect(response.status == 500, "GET of a damaged large value: \(response.status), \(response.body.count) bytes")
        } catch {
            // The transfer was cut short: the client saw it fail.
        }
        let other = try S.get(child.client(), key: "t/other")
        #expect(other.status == 200 && S.same(other.body, small), "the rest of the store is served")
        #expect(try child.client().put("t/new", "fine").status == 201)
        let deadline = Date().addingTimeInterval(5)
        while !(child.log.contains("t/small") && child.log.contains("t/large")) && Date() < deadline { usleep(20_000) }
        #expect(child.log.contains("t/small") && child.log.contains("t/large"), "the log names the damaged keys: \(child.log)")
    }
}
