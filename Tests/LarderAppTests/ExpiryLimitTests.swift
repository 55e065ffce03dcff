import Foundation
@testable import LarderClient
import LarderModel
import LarderWire
import Testing
import LarderTestSupport

/// One maximum TTL (`ExpiryLimit`, in LarderModel) for the server's
/// `?ttl=` and the Swift API: the longest TTL the client and the embedded
/// store cap at is the longest the server takes.
@Suite(.blockingLane) struct ExpiryLimitTests {
    @Test func serverTakesExactlyTheSharedMaximum() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let longest = ExpiryLimit.maximumTTLSeconds
        #expect(try client.send("PUT", "/store/far?ttl=\(longest)", body: Array("x".utf8)).status == 201)
        let over = try client.send("PUT", "/store/farther?ttl=\(longest + 1)", body: Array("x".utf8))
        #expect(over.status == 400)
        #expect(over.json?["error"] as? String == "invalid_argument", "\(over.text)")
        #expect(LarderClient.maximumTTLSeconds == longest)
        #expect(LarderClient.ttlSeconds(.seconds(Int64.max)) == Int(longest))
    }
}
