import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Large values stream to and from disk, and pipelined GETs of one are
/// answered one at a time: peak RSS stays bounded.
///
/// The test run sends 256 MiB, four times the bound (CI's time is counted);
/// `LARDER_MEMORY_MIB=1024 swift test --filter MemoryTests` sends the 1 GiB
/// API.md names as the largest value.
@Suite(.blockingLane, .serialized) struct MemoryTests {
    static let mebibytes = ProcessInfo.processInfo.environment["LARDER_MEMORY_MIB"].flatMap { Int($0) } ?? 256

    @Test func aLargePutAndGetKeepPeakRSSUnder64MiB() throws {
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--gzip-level", "1", "--log-level", "warning"])
        let block = Bytes.random(count: 1 << 20, seed: 42, alphabetBits: 6)
        let blocks = Self.mebibytes
        let size = blocks * block.count

        let connection = try HTTPClientConnection(port: child.port, timeout: 300)
        try connection.send("PUT /store/big/large HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\n\r\n")
        var sentCRC: UInt32 = 0
        var piece = block
        for i in 0..<blocks {
            // Stamp each MiB so no two are alike.
            piece.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(i), as: UInt64.self) }
            sentCRC = piece.withUnsafeBytes { Bytes.crc32($0, sentCRC) }
            try connection.send(piece)
        }
        let put = try connection.readResponse()
        #expect(put.status == 201)

        var receivedCRC: UInt32 = 0
        var received = 0
        try connection.send("GET /store/big/large HTTP/1.1\r\nHost: x\r\n\r\n")
        let get = try connection.readStreamingResponse { piece in
            receivedCRC = Bytes.crc32(piece, receivedCRC)
            received += piece.count
        }
        #expect(get.status == 200)
        #expect(received == size)
        #expect(receivedCRC == sentCRC)

        let peak = try #require(child.peakRSSKiB())
        print("larder peak RSS after a \(Self.mebibytes) MiB PUT and GET: \(peak) KiB")
        #expect(peak < 64 * 1024, "peak RSS \(peak) KiB")
    }

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
}
