import Foundation
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Crash safety with the real binary: SIGKILL in the middle of concurrent
/// writes, then a restart that must find every acknowledged value intact.
@Suite(.blockingLane, .serialized) struct DurabilityTests {
    static func value(for key: String) -> [UInt8] {
        var seed: UInt64 = 1469598103934665603
        for b in key.utf8 { seed = (seed ^ UInt64(b)) &* 1099511628211 }
        return Bytes.random(count: 200 + Int(seed % 30_000), seed: seed, alphabetBits: 6)
    }

    @Test func sigkillDuringConcurrentPutsLosesNoAcknowledgedWrite() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "warning"])
        let port = child.port
        let acknowledged = Locked<[String]>([])
        let attempted = Locked<Set<String>>([])
        let clients = 4, perClient = 500
        var threads: [Thread] = []
        let done = DispatchGroup()
        for t in 0..<clients {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                let client = WireClient(port: port)
                for i in 0..<perClient {
                    let key = "crash/c\(t)/k\(i)"
                    attempted.withLock { _ = $0.insert(key) }
                    guard let response = try? client.put(key, Self.value(for: key)) else { return }
                    if response.status == 201 { acknowledged.withLock { $0.append(key) } } else { return }
                }
            }
            threads.append(thread)
            thread.start()
        }
        // Kill once a good part of the 2,000 writes is acknowledged.
        let deadline = Date().addingTimeInterval(60)
        while acknowledged.withLock({ $0.count }) < 600 && Date() < deadline { usleep(2_000) }
        child.kill(SIGKILL)
        _ = child.waitForExit()
        done.wait()
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count >= 600)
        #expect(acked.count < clients * perClient, "the kill came after every write finished: not a crash test")

        // Every value file left on disk is a complete gzip file (checked by gzip itself).
        let values = dir + "/values"
        // Temp files of writes cut off by the kill are not values (start-up removes them).
        for file in StoreTestSupport.valueFiles(dir) where !(file.split(separator: "/").last!.hasPrefix("\\t")) {
            #expect(try StoreTestSupport.run(StoreTestSupport.gzipTool, ["-t", values + "/" + file]).status == 0,
                    "\(file) is not valid gzip")
        }

        let restarted = try ChildServer(dataDirectory: dir, arguments: ["--log-level", "warning"])
        let client = restarted.client()
        for key in acked {
            let response = try client.get(key)
            #expect(response.status == 200, "acknowledged \(key) is missing after the crash")
            #expect(response.body == Self.value(for: key), "acknowledged \(key) reads back wrong")
        }
        // Writes in flight at the crash are either absent or complete.
        let inFlight = attempted.withLock { $0 }.subtracting(acked)
        for key in inFlight {
            let response = try client.get(key)
            if response.status == 200 { #expect(response.body == Self.value(for: key), "\(key) is torn") }
            else { #expect(response.status == 404) }
        }
        // Start-up removed the temp files of interrupted writes.
        #expect(StoreTestSupport.regularFiles(under: dir + "/values").allSatisfy { !$0.contains("\\t") })
        restarted.kill(SIGTERM)
        #expect(restarted.waitForExit() == 0)
    }

    @Test func secondServerOnSameDirectoryIsRefused() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try ChildServer(dataDirectory: dir)
        let second = try ChildServer(dataDirectory: dir, waitUntilListening: false)
        let status = second.waitForExit()
        #expect(status != 0)
        #expect(second.log.contains("already using this data directory"), "message was: \(second.log)")
        // The first one keeps serving.
        #expect(try first.client().put("still/here", "yes").status == 201)
        first.kill(SIGTERM)
        #expect(first.waitForExit() == 0)
    }

    @Test func sigtermFinishesTheRequestInFlightThenExitsZero() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir)
        let connection = try HTTPClientConnection(port: child.port)
        let body = Bytes.random(count: 100_000, seed: 7, alphabetBits: 6)
        try connection.send("PUT /store/slow/upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n")
        try connection.send(Array(body[0..<50_000]))
        usleep(200_000)
        child.kill(SIGTERM)
        usleep(200_000)
        // New connections are refused while the upload is still served.
        #expect(throws: (any Error).self) { _ = try HTTPClientConnection(port: child.port).request("GET", "/healthz") }
        try connection.send(Array(body[50_000...]))
        let response = try connection.readResponse()
        #expect(response.status == 201)
        #expect(response.header("Connection") == "close")
        #expect(child.waitForExit() == 0)

        let restarted = try ChildServer(dataDirectory: dir)
        #expect(try restarted.client().get("slow/upload").body == body)
    }
}
