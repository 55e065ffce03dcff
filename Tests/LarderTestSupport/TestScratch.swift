import CLarderTestScratch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where this test process keeps its scratch files: `larder-tests-<pid>/`
/// on a tmpfs when the machine has a roomy one (`/dev/shm`), chosen before
/// `main` and exported as TMPDIR, so `NSTemporaryDirectory()` here and in
/// every child is this directory; it is removed at exit. Why a tmpfs, and
/// how it is chosen: Tests/CLarderTestScratch/scratch.c.
package enum TestScratch {
    /// This process's scratch directory, ending in "/" (the temp folder as
    /// before when none could be made).
    package static let root: String = {
        let chosen = String(cString: larder_test_scratch_root())
        return chosen.isEmpty ? NSTemporaryDirectory() : chosen
    }()

    /// Once per process: `sweepStale()`.
    package static let staleSwept: Void = sweepStale()

    /// The scratch directories beside this one of test processes that are
    /// gone (killed at a deadline, so their exit handler never ran) are
    /// removed, the PostgreSQL servers in them stopped first, so reruns pile
    /// up neither files in memory nor servers.
    package static func sweepStale() {
        let ownName = URL(fileURLWithPath: root).lastPathComponent
        guard ownName.hasPrefix("larder-tests-") else { return }
        let parent = URL(fileURLWithPath: root).deletingLastPathComponent().path + "/"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? [] where name.hasPrefix("larder-tests-") {
            guard let pid = Int32(name.dropFirst("larder-tests-".count)), pid != getpid(), !isRunning(pid) else { continue }
            let stale = parent + name + "/"
            TestPostgres.destroyStale(in: stale)
            try? FileManager.default.removeItem(atPath: stale)
        }
    }

    /// Whether a process `pid` is alive (one of another user's counts).
    package static func isRunning(_ pid: Int32) -> Bool { kill(pid, 0) == 0 || errno == EPERM }
}
