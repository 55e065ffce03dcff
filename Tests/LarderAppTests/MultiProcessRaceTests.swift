import Foundation
import LarderTestSupport
import Testing

/// docs/reliability.md, races: 8 Python processes share the real server,
/// each doing compare-and-swap increments of one counter and appends to one
/// list, interleaved (`Tests/stress/sharing_stress.py`); the totals must be
/// exact and each process's appends in its own order.
@Suite(.blockingLane) struct MultiProcessRaceTests {
    @Test func eightProcessesKeepExactTotals() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await PythonRunner.run([Repository.path("Tests/stress/sharing_stress.py"), "http://127.0.0.1:\(server.port)",
                                                 "--processes", "8", "--increments", "40", "--appends", "40"], timeout: 600)
        let line = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any]
        #expect(result.status == 0 && line?["ok"] as? Bool == true, "\(result.stdout) \(result.stderr)")
        #expect(line?["counter"] as? Int == 320 && line?["list"] as? Int == 320, "\(result.stdout)")
    }
}
