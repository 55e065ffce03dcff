import Foundation
import LarderStorage
import LarderValueFile
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

    init(directory: String) throws {
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
