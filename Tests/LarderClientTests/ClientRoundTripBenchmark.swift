import Foundation
import LarderClient
import LarderTestSupport
import Testing

/// The client's round trip for a 1 KiB fetch, sequential on one client:
/// median and p99 in microseconds. Runs only when `LARDER_BENCH_URL` names a
/// running server (Benchmarks/client-roundtrip.sh starts the release `larder`);
/// it prints figures and asserts nothing about time.
@Suite(.blockingLane, .serialized) struct ClientRoundTripBenchmark {
    static let url = ProcessInfo.processInfo.environment["LARDER_BENCH_URL"]

    @Test(.enabled(if: url != nil), arguments: [LarderClient.Transport.larderWire, .urlSession])
    func fetchOneKiB(_ transport: LarderClient.Transport) async throws {
        let environment = ProcessInfo.processInfo.environment
        // LARDER_BENCH_TRANSPORT=larderWire (or urlSession) measures one alone, for a profiler.
        if let only = environment["LARDER_BENCH_TRANSPORT"], only != "\(transport)" { return }
        let count = Int(environment["LARDER_BENCH_COUNT"] ?? "") ?? 5000
        let larder = LarderClient(baseURL: URL(string: Self.url!)!, transport: transport)
        let value = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try await larder.save(value, at: "bench/1k")
        for _ in 0..<200 { _ = try await larder.fetch("bench/1k") }   // warm the connection and caches
        var micros: [Double] = []
        micros.reserveCapacity(count)
        let clock = ContinuousClock()
        for _ in 0..<count {
            let start = clock.now
            let stored = try await larder.fetch("bench/1k")
            let elapsed = clock.now - start
            precondition(stored.data.count == 1024)
            micros.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
        }
        micros.sort()
        let median = micros[micros.count / 2]
        let p99 = micros[min(micros.count - 1, micros.count * 99 / 100)]
        print("LarderClient (\(transport)) " + String(format: "1 KiB fetch x%d: median %.0f us, p99 %.0f us", count, median, p99))
    }
}
