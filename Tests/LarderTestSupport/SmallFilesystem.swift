import Foundation
import LarderWire

/// A real, small filesystem for disk-fault tests: a tmpfs of `bytes`
/// mounted on a fresh directory (needs root and mount permission, as the
/// development machine and CI have; `isAvailable` says whether they do).
package final class SmallFilesystem {
    package let path: String

    /// Whether tmpfs can be mounted here (checked once, with a real mount).
    package static let isAvailable: Bool = {
        guard let fs = try? SmallFilesystem(bytes: 1 << 20) else { return false }
        fs.unmount()
        return true
    }()

    package init(bytes: Int, readOnly: Bool = false) throws {
        path = TestServer.makeTempDirectory()
        let mount = try ProcessRunner.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", path])
        guard mount.status == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw ClientError("mount tmpfs on \(path): \(mount.stderr)")
        }
    }

    /// Makes the filesystem read-only from now on (what a full-disk
    /// remount or a read-only volume does).
    package func remountReadOnly() throws {
        let remount = try ProcessRunner.run("/bin/mount", ["-o", "remount,ro", path])
        guard remount.status == 0 else { throw ClientError("remount ro \(path): \(remount.stderr)") }
    }

    package func unmount() {
        _ = try? ProcessRunner.run("/bin/umount", ["-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    deinit { unmount() }
}
