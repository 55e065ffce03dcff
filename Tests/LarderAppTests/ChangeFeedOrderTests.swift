import Foundation
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// The change feed delivers events in the ring's order, so a client that
/// reconnects with `Last-Event-ID` loses none and gets none twice.
/// Serialized: the race shows only when the server has the cores to itself.
@Suite(.blockingLane, .serialized) struct ChangeFeedOrderTests {
    /// Before: events were queued for delivery outside the hub's lock, so
    /// concurrent writers' events could reach a stream in an order other than
    /// the ring's; a client reconnecting with Last-Event-ID then lost some and
    /// got others twice. The race is rare per event: three rounds of 8 × 250
    /// PUTs (before the fix, 0 to ~30 inversions a round).
    @Test func liveOrderMatchesReplayAfterLastEventID() throws {
        for round in 1...3 {
            let issues = try Self.orderRound(round, threads: 8, perThread: 250)
            if issues > 0 { break }
        }
    }

    /// One round against a fresh child server; the number of failed checks.
    static func orderRound(_ round: Int, threads: Int, perThread: Int) throws -> Int {
        // A child process (default history: 10,000 events): in this process the
        // server shares its cores with the test's threads and the race hardly shows.
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try ChildServer(dataDirectory: dir, arguments: ["--no-fsync", "--log-level", "warning"])
        let port = child.port
        func subscribe(_ headers: [(String, String)] = []) throws -> SSEClient {
            let reader = try SSEClient(port: port, target: "/events?prefix=ord/", headers: headers)
            let status = try reader.readHead()
            guard status == 200 else { throw ClientError("GET /events answered \(status)") }
            return reader
        }
        let live = try subscribe()
        defer { live.close() }
        let total = threads * perThread
        var issues = 0
        func check(_ ok: Bool, _ message: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
            if !ok { issues += 1; Issue.record("round \(round): \(message())", sourceLocation: sourceLocation) }
        }

        let errors = S.onThreads(threads) { t in
            let connection = try HTTPClientConnection(port: port, timeout: 20)
            for i in 0..<perThread {
                let put = try connection.request("PUT", "/store/ord/t\(t)/k\(i)", body: [UInt8(ascii: "x")])
                guard put.status == 201 else { throw ClientError("PUT ord/t\(t)/k\(i): \(put.status)") }
            }
        }
        check(errors.isEmpty, "\(errors.prefix(3))")

        let delivered = try live.events(total)
        check(delivered.count == total, "the live stream delivered \(delivered.count) of \(total) events")
        let ids = delivered.compactMap(\.id)
        check(ids.count == delivered.count && Set(ids).count == ids.count, "ids missing or repeated")
        guard ids.count == total, issues == 0 else { return max(issues, 1) }

        /// Everything a stream opened with `Last-Event-ID: id` replays (it reads until quiet).
        func replay(after id: String, expecting count: Int) throws -> [String] {
            let reader = try subscribe([("Last-Event-ID", id)])
            defer { reader.close() }
            var got = try reader.events(count).compactMap(\.id)
            while let extra = try reader.nextEvent(timeout: 0.3) { got.append(extra.id ?? "-") }
            return got
        }
        func describe(_ got: [String], _ want: [String]) -> String {
            let lost = Set(want).subtracting(got).count, repeated = Set(got).subtracting(want).count
            let first = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            return "replayed \(got.count), expected \(want.count): \(lost) never delivered, \(repeated) delivered twice, first difference at \(first.map(String.init) ?? "end")"
        }

        // The whole ring after the first event (an unknown id gets a reset,
        // not a replay) is in exactly the order the live stream saw.
        let later = Array(ids.dropFirst())
        let ring = try replay(after: ids[0], expecting: later.count)
        let position = Dictionary(ring.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { a, _ in a })
        let inversions = zip(later, later.dropFirst()).filter { (position[$0] ?? 0) > (position[$1] ?? 0) }.count
        check(ring == later, "ring order differs from delivery order (\(inversions) inversions): \(describe(ring, later))")

        for k in [100, 800] {
            let want = Array(ids[(k + 1)...])
            let got = try replay(after: ids[k], expecting: want.count)
            check(got == want, "Last-Event-ID = delivered[\(k)]: \(describe(got, want))")
        }
        return issues
    }
}
