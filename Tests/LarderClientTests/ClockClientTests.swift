import Foundation
import LarderClient
import LarderTestSupport
import Testing

/// The Swift client's clock calls against the real server, through a
/// client whose base URL is a namespace: the doc comment's example, set,
/// freeze and reset, and a backwards set refused.
@Suite(.asyncLane) struct ClockClientTests {
    @Test func aSessionExpiresWhenTheClientMovesTheNamespacesClock() async throws {
        let server = try TestServer()
        let larder = LarderClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)/ns/w1")!, timeout: 10)
        _ = try await larder.save(Data("{}".utf8), at: "sessions/abc", contentType: "application/json",
                                  condition: .none, ttl: .seconds(1800))
        let moved = try await larder.advanceClock(by: .seconds(29 * 60))
        #expect(moved.offsetMs >= 29 * 60_000 && !moved.frozen)
        #expect(try await larder.fetchIfPresent("sessions/abc") != nil)
        try await larder.advanceClock(by: .seconds(31 * 60))
        #expect(try await larder.fetchIfPresent("sessions/abc") == nil)

        #expect(try await larder.freezeClock().frozen)
        let set = try await larder.setClock(to: Date(timeIntervalSince1970: 1_900_000_000))
        #expect(set.now == "2030-03-17T17:46:40.000Z" && set.frozen)
        #expect(try await larder.clock().now == "2030-03-17T17:46:40.000Z")
        await #expect(throws: LarderError.self) { try await larder.setClock(to: Date(timeIntervalSince1970: 1_800_000_000)) }
        #expect(try await !larder.freezeClock(false).frozen)
        let reset = try await larder.resetClock()
        #expect(reset.offsetMs == 0 && !reset.frozen)
        // The default namespace's clock never moved.
        let other = LarderClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, timeout: 10)
        #expect(try await other.clock().offsetMs == 0)
    }
}
