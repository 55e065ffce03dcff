import Foundation
#if canImport(Glibc)
import Glibc
#endif
import LarderTestSupport
import Testing

/// docs/reliability.md: a test process keeps its scratch files in
/// `larder-tests-<pid>/`, on /dev/shm when that is a roomy tmpfs, exported
/// as TMPDIR to the process and its children; a killed run's is swept.
@Suite(.blockingLane) struct ScratchDirectoryTests {
    /// statvfs's ST_NOEXEC (a GNU constant the Glibc module leaves out).
    static let noexec: UInt = 8

    @Test func theProcessAndItsChildrenUseTheScratchDirectory() throws {
        let root = TestScratch.root
        #expect(root.hasSuffix("/larder-tests-\(getpid())/"), "\(root)")
        #expect(NSTemporaryDirectory() == root)
        #expect(TestServer.makeTempDirectory().hasPrefix(root))
        let child = try ProcessRunner.run("/bin/sh", ["-c", "printf %s \"$TMPDIR\""])
        #expect(child.stdoutText == root)
        // On a machine whose /dev/shm is a tmpfs with room that may hold
        // programs (this one and CI; a container's is noexec), that is where
        // it is, unless LARDER_TEST_SCRATCH names another place.
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        let shmIsTmpfs = mounts.split(separator: "\n").contains { $0.split(separator: " ").prefix(3).dropFirst() == ["/dev/shm", "tmpfs"] }
        var vfs = statvfs()
        if ProcessInfo.processInfo.environment["LARDER_TEST_SCRATCH"] == nil, shmIsTmpfs,
           statvfs("/dev/shm", &vfs) == 0, UInt64(vfs.f_bavail) * UInt64(vfs.f_frsize) >= 2 << 30,
           vfs.f_flag & Self.noexec == 0 {
            #expect(root.hasPrefix("/dev/shm/"), "\(root)")
        }
        // Wherever it is, a program copied there runs (the viewer's tests run a copied larder).
        #expect(access(root, X_OK) == 0)
        var here = statvfs()
        #expect(statvfs(root, &here) == 0 && here.f_flag & Self.noexec == 0, "\(root) is on a noexec mount")
    }

    @Test func aGoneProcesssDirectoryIsSweptAndALiveOnesIsKept() throws {
        let parent = URL(fileURLWithPath: TestScratch.root).deletingLastPathComponent().path + "/"
        // A pid that was just used and is gone: a child that has exited.
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let gone = parent + "larder-tests-\(finished.processIdentifier)/"
        let live = parent + "larder-tests-\(getppid())/"
        for directory in [gone, live] {
            try FileManager.default.createDirectory(atPath: directory + "data", withIntermediateDirectories: true)
        }
        defer { try? FileManager.default.removeItem(atPath: live) }
        TestScratch.sweepStale()
        #expect(!FileManager.default.fileExists(atPath: gone))
        #expect(FileManager.default.fileExists(atPath: live + "data"))
        #expect(FileManager.default.fileExists(atPath: TestScratch.root))
    }
}
