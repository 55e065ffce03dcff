import FoundationEssentials
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// An unlinked temp file: a large value on its way between the database
/// and a client sits here rather than in memory. It has no name from the
/// moment it is made, so nothing is left behind however the process ends.
final class SpoolFile {
    private(set) var fd: Int32
    let path: String
    private(set) var size = 0

    /// Linux's `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`; the macro is not
    /// imported, and `__O_TMPFILE` is 0o20000000 on x86-64 and arm64 alike):
    /// a file with no name from the start.
    private static let openTemporary: Int32 = 0o20000000 | O_DIRECTORY

    init(directory: String) throws {
        // No name at all: no directory entry to make and remove again, which
        // was a tenth of the kernel's time of a small PostgreSQL write.
        let unnamed = open(directory, Self.openTemporary | O_RDWR | O_CLOEXEC, 0o600)
        if unnamed >= 0 {
            fd = unnamed
            path = (directory.hasSuffix("/") ? directory : directory + "/") + "(unnamed spool file)"
            return
        }
        // A file system without it (EOPNOTSUPP, EISDIR on old kernels): a named file, unlinked at once.
        var template = Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast())
            + Array("larder-spool-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw StoreError.io(operation: "mkstemp", path: directory, errno: errno) }
        self.path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        self.fd = fd
        unlink(path)
    }

    deinit { close() }

    func append(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(operation: "write", path: path, errno: errno)
            }
            offset += n
        }
        size += bytes.count
    }

    /// Hands the descriptor to a new owner; this object no longer closes it.
    func takeDescriptor() -> Int32 {
        defer { fd = -1 }
        return fd
    }

    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    /// `count` bytes at `offset` of an open file.
    static func read(_ fd: Int32, at offset: Int, count: Int, path: String) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.io(operation: "pread", path: path, errno: errno)
            }
            if n == 0 { throw StoreError.corrupt(path: path, reason: "the file ends early") }
            done += n
        }
        return out
    }
}
