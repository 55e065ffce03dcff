import Foundation
import LarderTestSupport
import Testing

/// docs/reliability.md, hostile clients: `Tests/stress/hostile_clients.py`
/// (CI sizes) holds 2,000 idle keep-alive connections, 1,000 watchers and
/// 200 event-stream readers, 100 slowloris clients and 20 clients that
/// never read, each while a normal client keeps reading a 1 KiB value, and
/// fills `--max-connections`; it checks the bounds it states (normal p99,
/// RSS growth, 503 then service again). Without `--quick` it is the full run.
@Suite(.longBlockingLane) struct HostileClientTests {
    @Test func hostileAndHeavyClientsLeaveTheNormalClientServed() async throws {
        let result = try await PythonRunner.run([Repository.path("Tests/stress/hostile_clients.py"), ChildServer.binaryPath, "--quick"],
                                                timeout: 600)
        let lines = result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        let scenarios = Set(lines.compactMap { $0["scenario"] as? String })
        #expect(scenarios.isSuperset(of: ["idle", "parked", "slowloris", "nonreader", "limit"]), "\(result.stdout) \(result.stderr)")
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
    }
}
