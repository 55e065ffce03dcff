import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Thousands of idle keep-alive connections cost descriptors, not threads,
/// a few KiB of memory each once idle (their buffers' pages go back to the
/// kernel, `PageMemory`), and every descriptor comes back when its
/// connection ends.
@Suite(.blockingLane, .serialized) struct ConnectionScaleTests {
    static func count(_ directory: String) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1
    }

    static func residentKiB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func twoThousandIdleKeepAliveConnectionsAndNoLeakedDescriptors() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        let pid = child.process.processIdentifier
        try child.client().put("k", "v")
        usleep(100_000)
        let baselineFDs = Self.count("/proc/\(pid)/fd")
        let baselineRSS = Self.residentKiB(pid)

        var idle: [HTTPClientConnection] = []
        for _ in 0..<2000 {
            let connection = try HTTPClientConnection(port: child.port, timeout: 10)
            #expect(try connection.request("GET", "/store/k").status == 200)
            idle.append(connection)
        }
        // Still serving everyone, on a handful of threads.
        #expect(try child.client().get("k").text == "v")
        #expect(try idle[0].request("GET", "/store/k").text == "v")
        #expect(try idle[1999].request("GET", "/store/k").text == "v")
        let threads = Self.count("/proc/\(pid)/task")
        #expect(threads < 32, "\(threads) threads for 2000 connections")
        #expect(Self.count("/proc/\(pid)/fd") >= baselineFDs + 2000)
        // Idle for 2 s, each connection hands its buffers' pages back (it
        // held 12 KiB before; 64 KiB of buffers are mapped for each).
        var perConnection = Int.max
        let settled = Date().addingTimeInterval(10)
        while Date() < settled {
            usleep(250_000)
            perConnection = (Self.residentKiB(pid) - baselineRSS) * 1024 / 2000
            if perConnection < 8192 { break }
        }
        print("resident memory per idle keep-alive connection: \(perConnection) bytes")
        #expect(perConnection < 8192, "\(perConnection) bytes of resident memory per idle connection")

        // Every way a connection can end: client close, server close after
        // an error (lingering), and HTTP/1.0.
        idle.removeAll()
        for i in 0..<300 {
            let connection = try HTTPClientConnection(port: child.port, timeout: 10)
            switch i % 3 {
            case 0: try connection.send("GARBAGE\r\n\r\n")
            case 1: try connection.send("GET /healthz HTTP/1.0\r\n\r\n")
            default: try connection.send("GET /store/k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            }
            _ = try connection.readResponse()
        }
        // Lingering closes end within 2 s; on a loaded machine (CI builds
        // images beside the tests) the 2,300 closes themselves take a while.
        let deadline = Date().addingTimeInterval(30)
        while Self.count("/proc/\(pid)/fd") > baselineFDs && Date() < deadline { usleep(50_000) }
        #expect(Self.count("/proc/\(pid)/fd") <= baselineFDs, "descriptors leaked")
    }
}
