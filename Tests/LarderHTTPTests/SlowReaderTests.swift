import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A reader that keeps reading, however slowly, is not idle; one that stops
/// reading is closed at the idle timeout, even with more bytes sent.
@Suite(.blockingLane) struct SlowReaderTests {
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
}
