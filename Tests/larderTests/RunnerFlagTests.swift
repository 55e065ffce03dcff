import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What a test harness needs from the binary: `--ephemeral` data that is
/// gone after the run, and the server's URL as the first line on stdout.
@Suite(.blockingLane) struct RunnerFlagTests {
    /// A port nobody listens on right now.
    static func freePort() throws -> Int {
        let listener = try Listener()
        return listener.port
    }

    /// A bound, listening loopback socket (holds its port while alive).
    final class Listener {
        let fd: Int32
        let port: Int
        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(fd, 1) == 0 else {
                close(fd)
                throw ClientError("cannot bind a loopback socket: errno \(errno)")
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            self.fd = fd
            self.port = Int(UInt16(bigEndian: address.sin_port))
        }
        deinit { close(fd) }
    }

    @Test func theFirstLineOnStdoutIsTheURLAndLogsGoToStderr() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "debug", "--no-fsync"])
        let client = child.client()
        try client.put("k", "v")
        #expect(try client.get("k").text == "v")
        child.kill(SIGTERM)
        #expect(child.waitForExit() == 0)
        #expect(child.stdout == "http://127.0.0.1:\(child.port)\n", "stdout: \(child.stdout.debugDescription)")
        #expect(child.log.contains("PUT /store/k 201"), "request lines go to stderr")
        #expect(child.log.contains("listening on http://127.0.0.1:\(child.port) "))

        // With a fixed port too: the same line, so a harness needs one way to read it.
        let port = try Self.freePort()
        let fixed = try ChildServer(dataDirectory: dir, arguments: ["--port", "\(port)", "--log-level", "warning"])
        #expect(fixed.port == port)
        #expect(fixed.stdout == "http://127.0.0.1:\(port)\n")
        #expect(try fixed.client().get("k").text == "v")
    }

    @Test func ephemeralDataIsFreshPrivateAndGoneAtExit() throws {
        let tmp = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let environment = ["TMPDIR": tmp]
        let first = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--log-level", "notice"], environment: environment)
        let second = try ChildServer(dataDirectory: nil, arguments: ["--log-level", "notice"],
                                     environment: environment.merging(["LARDER_EPHEMERAL": "1"]) { $1 })
        let firstDir = try #require(first.loggedDataDirectory)
        let secondDir = try #require(second.loggedDataDirectory)
        #expect(firstDir.hasPrefix(tmp + "/larder-ephemeral-"), "\(firstDir) is not under TMPDIR")
        #expect(firstDir != secondDir, "two ephemeral servers share a directory")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp).count == 2)
        try first.client().put("k", "first")
        #expect(try second.client().get("k").status == 404, "an ephemeral server saw another's data")

        first.kill(SIGTERM)
        #expect(first.waitForExit() == 0)
        second.kill(SIGINT)
        #expect(second.waitForExit() == 0)
        let left = try FileManager.default.contentsOfDirectory(atPath: tmp)
        #expect(left.isEmpty, "left behind: \(left)")
    }

    /// A harness may stop the server the moment it has read the URL: the
    /// signal must neither be lost (a server that never exits) nor kill it
    /// before it can clean up (an ephemeral directory left behind).
    @Test func aSignalRightAfterTheURLStopsTheServerCleanly() throws {
        let tmp = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        for round in 0..<30 {
            let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--log-level", "warning"],
                                        environment: ["TMPDIR": tmp])
            child.kill(round % 2 == 0 ? SIGTERM : SIGINT)
            let deadline = Date().addingTimeInterval(3)
            while child.process.isRunning && Date() < deadline { usleep(2_000) }
            guard !child.process.isRunning else {
                Issue.record("round \(round): the server ignored a signal sent right after its URL line")
                child.kill(SIGKILL)
                _ = child.waitForExit()
                break
            }
            #expect(child.waitForExit() == 0, "round \(round): \(child.log)")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: tmp)
        #expect(left.isEmpty, "left behind: \(left)")
    }

    @Test func aFailedStartRemovesTheEphemeralDirectory() throws {
        let tmp = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let taken = try Listener()
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--port", "\(taken.port)"],
                                    environment: ["TMPDIR": tmp], waitUntilListening: false)
        #expect(child.waitForExit() == 1)
        #expect(child.log.contains("bind"), "\(child.log)")
        #expect(child.stdout.isEmpty, "a URL was printed for a server that did not start")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp).isEmpty)
    }

    @Test func ephemeralAndADataDirectoryConflict() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let both = try ChildServer(dataDirectory: dir, arguments: ["--ephemeral"], waitUntilListening: false)
        #expect(both.waitForExit() != 0)
        #expect(both.log.contains("--ephemeral and --data-dir cannot be used together"), "\(both.log)")
        let bothFromEnvironment = try ChildServer(dataDirectory: nil, environment: ["LARDER_EPHEMERAL": "1", "LARDER_DATA_DIR": dir],
                                                  waitUntilListening: false)
        #expect(bothFromEnvironment.waitForExit() != 0)
        #expect(bothFromEnvironment.log.contains("LARDER_EPHEMERAL and LARDER_DATA_DIR cannot be used together"))
        // A flag beats the other's environment variable, as everywhere.
        let flagWins = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--log-level", "notice"],
                                       environment: ["LARDER_DATA_DIR": dir + "/unused"])
        #expect(flagWins.loggedDataDirectory?.contains("larder-ephemeral-") == true)
        #expect(!FileManager.default.fileExists(atPath: dir + "/unused"))
        flagWins.kill(SIGTERM)
        #expect(flagWins.waitForExit() == 0)
    }
}
