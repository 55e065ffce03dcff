import Foundation
import LarderEmbedded
import LarderTestSupport
import Testing

/// Save and fetch rates of a ~1 KiB Codable value, fsync off and on. Runs
/// only with `LARDER_BENCH=1` and asserts no timing: it prints figures.
///     LARDER_BENCH=1 swift test -c release --filter EmbeddedLarderBenchmark
@Suite(.blockingLane) struct EmbeddedLarderBenchmark {
    struct Profile: Codable {
        var id: Int
        var name: String
        var bio: String
        var tags: [String]
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["LARDER_BENCH"] != nil))
    func saveAndFetchRates() throws {
        let profile = Profile(id: 1, name: "Ada", bio: String(repeating: "x", count: 900), tags: ["a", "b", "c"])
        for fsync in [false, true] {
            let dir = URL(fileURLWithPath: TestServer.makeTempDirectory(), isDirectory: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let larder = try EmbeddedLarder(directory: dir, fsync: fsync)
            defer { larder.close() }
            let n = fsync ? 500 : 5000
            var start = Date()
            for i in 0..<n { try larder.save(profile, at: "p/\(i % 100)") }
            let saves = Double(n) / Date().timeIntervalSince(start)
            start = Date()
            for i in 0..<n { _ = try larder.fetch(Profile.self, at: "p/\(i % 100)") }
            let fetches = Double(n) / Date().timeIntervalSince(start)
            print("embedded fsync=\(fsync): \(Int(saves)) saves/s, \(Int(fetches)) fetches/s (\(n) each, 1 KiB JSON)")
        }
    }
}
