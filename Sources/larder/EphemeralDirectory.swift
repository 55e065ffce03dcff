import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The data directory of `--ephemeral`: a fresh `larder-ephemeral-XXXXXX`
/// made by mkdtemp(3) under `$TMPDIR` (or `/tmp`), so no two servers share
/// one and no earlier run's data shows through. The server removes it when
/// it exits: after a graceful stop (SIGINT/SIGTERM), or when start-up
/// fails. A server killed with SIGKILL cannot, and leaves it behind.
struct EphemeralDirectory {
    let path: String

    init() throws {
        let parent = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((parent.hasSuffix("/") ? parent : parent + "/").utf8CString.dropLast())
            + Array("larder-ephemeral-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw EphemeralDirectoryError("cannot create a temporary data directory under \(parent): \(String(cString: strerror(errno)))")
        }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Deletes the directory and everything in it; reports what it could not.
    func remove() {
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            StandardError.write("larder: cannot remove the ephemeral data directory \(path): \(error)\n")
        }
    }
}

struct EphemeralDirectoryError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
