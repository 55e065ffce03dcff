import Foundation
import LarderTestSupport
import Testing

/// docs/reliability.md, crash consistency: `Tests/crash/crash_harness.py`
/// SIGKILLs the real `larder` binary at random moments during mixed
/// concurrent load (PUT, DELETE, append, create) from 8 clients, restarts
/// it, and checks every acknowledged operation. CI runs the short variant;
/// `--kills 50` is the long run.
@Suite(.longBlockingLane, .serialized) struct CrashConsistencyTests {
    static func harness(_ arguments: [String]) async throws -> (status: Int32, lines: [[String: Any]], output: String) {
        let result = try await PythonRunner.run([Repository.path("Tests/crash/crash_harness.py"), "--binary", ChildServer.binaryPath]
                                                + arguments, timeout: 600)
        let lines = result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        return (result.status, lines, result.stdout + result.stderr)
    }

    @Test(arguments: [["--kills", "5"], ["--kills", "3", "--no-fsync"]])
    func killedAtRandomMomentsLosesNoAcknowledgedWrite(arguments: [String]) async throws {
        let run = try await Self.harness(arguments + ["--seed", "7"])
        let summary = try #require(run.lines.last { $0["summary"] != nil }, "\(run.output)")
        #expect(run.status == 0 && summary["violations"] as? Int == 0, "\(run.output)")
        #expect((summary["acknowledged"] as? Int ?? 0) > 100, "the load got going: \(summary)")
    }

    /// A replace restore killed at a random moment (API.md, Snapshots):
    /// after the restart the prefix holds the set before it or the restored
    /// one, never a mix, and the restored one whenever it was answered.
    @Test func aRestoreKilledMidwayLeavesTheOldSetOrTheNew() async throws {
        let run = try await Self.harness(["--restore", "--kills", "3", "--lines", "4000", "--max-run", "0", "--seed", "11"])
        let summary = try #require(run.lines.last { $0["summary"] != nil }, "\(run.output)")
        #expect(run.status == 0 && summary["violations"] as? Int == 0, "\(run.output)")
        #expect(run.lines.filter { $0["kill"] != nil }.count == 3, "\(run.output)")
    }

    /// The check itself: a value file removed behind the server's back is
    /// reported as a lost acknowledged write.
    @Test func theCheckFindsALostWrite() async throws {
        let run = try await Self.harness(["--kills", "1", "--no-fsync", "--sabotage", "--seed", "8"])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("expected one of"), "\(run.output)")
    }
}
