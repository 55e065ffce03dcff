import Foundation
import InMemoryLogging
import LarderApp
import LarderRouting
import LarderServer
import LarderDiskStore
import LarderEmbedded
import LarderSupport
import LarderWire
import Logging
import Testing
import LarderTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Larder logs through swift-log: its line format is `LarderLogHandler`,
/// which the `larder` executable bootstraps, and an app that embeds the
/// server or the store gets the same lines in its own backend (here
/// swift-log's in-memory one).
@Suite(.blockingLane) struct LoggingTests {
    /// Runs `body` with a server whose every logger writes to `handler`,
    /// as an app's would, then shuts it down (every request line written)
    /// and returns its URL and data directory.
    static func withServer(_ handler: InMemoryLogHandler, _ body: (WireClient) throws -> Void) throws -> (url: String, dir: String) {
        let dir = TestServer.makeTempDirectory()
        var disk = DiskStoreOptions(dataDirectory: dir)
        disk.fsync = false
        var config = LarderConfiguration(storeDescription: dir, openStore: DiskStore.factory(options: disk))
        config.http.port = 0
        let server = try LarderServer(configuration: config, logger: Logger(label: "app") { _ in handler })
        defer { server.shutdown() }
        try server.start()
        try body(WireClient(port: server.port))
        return (server.url, dir)
    }

    static func messages(_ handler: InMemoryLogHandler) -> [String] { handler.entries.map(\.message.description) }

    @Test func anEmbeddingAppGetsTheAccessLogInItsOwnBackend() throws {
        var handler = InMemoryLogHandler()
        handler.logLevel = .info
        let (url, dir) = try Self.withServer(handler) { client throws in
            #expect(try client.put("k", "v").status == 201)
            #expect(try client.send("GET", "/store/k?access_token=s3cret").status == 200)
        }
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lines = Self.messages(handler)
        #expect(lines.contains { $0.hasPrefix("larder listening on \(url) with data in \(dir)") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("PUT /store/k 201 ") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("GET /store/k?access_token=REDACTED 200 ") }, "\(lines)")
        #expect(!lines.contains { $0.contains("s3cret") }, "a token reached the log: \(lines)")
    }

    @Test func aLevelAboveInfoBuildsNoRequestLineButSaysWhereItListens() throws {
        var handler = InMemoryLogHandler()
        handler.logLevel = .warning
        let (_, dir) = try Self.withServer(handler) { client throws in
            #expect(try client.put("k", "v").status == 201)
        }
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lines = Self.messages(handler)
        #expect(lines.contains { $0.hasPrefix("larder listening on ") }, "the listening line is always written: \(lines)")
        #expect(!lines.contains { $0.contains("/store/k") }, "\(lines)")
    }

    @Test func anEmbeddedStoreLogsToTheLoggerItIsGiven() throws {
        var handler = InMemoryLogHandler()
        handler.logLevel = .debug
        let dir = URL(fileURLWithPath: TestServer.makeTempDirectory())
        defer { try? FileManager.default.removeItem(at: dir) }
        let larder = try EmbeddedLarder(directory: dir, fsync: false, logger: Logger(label: "larder.store") { _ in handler })
        defer { larder.close() }
        // The start-up scan runs in the background and says when it is done.
        let deadline = Date().addingTimeInterval(30)
        while !Self.messages(handler).contains(where: { $0.hasPrefix("start-up scan: 0 values in ") }), Date() < deadline {
            usleep(10_000)
        }
        #expect(Self.messages(handler).contains { $0.hasPrefix("start-up scan: 0 values in ") }, "\(Self.messages(handler))")
    }

    /// Larder's own format, through a pipe: one line per message, time,
    /// level, label, message, then the metadata; nothing below the level.
    @Test func larderLogHandlerWritesLarderLines() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var logger = Logger(label: "larder.http") { LarderLogHandler(label: $0, level: .info, fd: fds[1]) }
        logger.info("GET /x 200 5B 0.1ms")
        logger.debug("not written")
        logger[metadataKey: "connection"] = "7"
        logger.warning("slow")
        logger.logLevel = .error
        logger.warning("not written either")
        logger.always(.notice, "written whatever the level")
        close(fds[1])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fds[0], &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines)")
        let time = #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /#
        #expect(lines.allSatisfy { $0.prefixMatch(of: time) != nil }, "\(lines)")
        #expect(lines.map { String($0.dropFirst(25)) } == [
            "info larder.http: GET /x 200 5B 0.1ms",
            "warning larder.http: slow connection=7",
            "notice larder.http: written whatever the level connection=7",
        ])
    }

    /// The executable bootstraps swift-log with Larder's handler: its lines
    /// on stderr, labelled by the part of the server that wrote them.
    @Test func theExecutableWritesLarderLinesToStderr() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "info", "--no-fsync"])
        #expect(try child.client().put("k", "v").status == 201)
        // The store's line comes at the end of its background start-up scan.
        let deadline = Date().addingTimeInterval(30)
        while !child.log.contains(" larder.store: store "), Date() < deadline { usleep(10_000) }
        child.kill(SIGTERM)
        #expect(child.waitForExit() == 0)
        let log = child.log
        #expect(log.contains(" notice larder: larder listening on http://127.0.0.1:\(child.port) with data in \(dir)"), "\(log)")
        #expect(log.contains(" info larder.http: PUT /store/k 201 "), "\(log)")
        #expect(log.contains(" info larder.store: store \(dir): "), "\(log)")
        #expect(log.contains(" notice larder: stopped"), "\(log)")
    }
}
