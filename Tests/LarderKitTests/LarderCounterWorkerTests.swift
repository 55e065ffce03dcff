import Foundation
import LarderClient
import LarderTestSupport
import Testing

extension KitTests {
    /// `update` across processes: two LarderCounterWorker processes increment one
    /// counter on one real server at the same time, and no increment is lost.
    @Suite struct LarderCounterWorkerTests {
        struct Counter: Codable, Equatable {
            var value: Int
        }

        /// The worker executable next to the test bundle, where `swift build` puts every product.
        static var workerPath: String { ChildServer.productPath("LarderCounterWorker") }

        @Test func twoProcessesLoseNoIncrement() async throws {
            let path = Self.workerPath
            try #require(FileManager.default.isExecutableFile(atPath: path), "no LarderCounterWorker at \(path); run `swift build` first")
            let server = try TestServer()
            defer { server.stop() }
            let url = "http://127.0.0.1:\(server.port)"

            // Both at once, each with 2 tasks × 50 increments, on their own threads
            // (ProcessRunner blocks until its process exits).
            async let first = Self.run(path, [url, "race/counter", "2", "50"])
            async let second = Self.run(path, [url, "race/counter", "2", "50"])
            for result in try await [first, second] {
                #expect(!result.timedOut)
                #expect(result.status == 0, "worker failed: \(result.stderr)")
            }
            let counter = try await LarderClient(baseURL: URL(string: url)!).fetch(Counter.self, at: "race/counter")
            #expect(counter == Counter(value: 200))
        }

        /// A worker, waited for off the cooperative pool, so both run together.
        static func run(_ path: String, _ arguments: [String]) async throws -> ProcessRunner.Result {
            try await ProcessRunner.run(path, arguments, timeout: 120)
        }

        @Test func badArgumentsExitWithUsage() throws {
            let path = Self.workerPath
            try #require(FileManager.default.isExecutableFile(atPath: path), "no LarderCounterWorker at \(path)")
            let result = try ProcessRunner.run(path, ["http://127.0.0.1:1", "k", "two"], timeout: 30)
            #expect(result.status == 2)
            #expect(result.stderr.contains("usage:"))
        }
    }
}
