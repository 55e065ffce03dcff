import LarderStorage
import LarderValueFile
import FoundationEssentials
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// An advisory `flock` on `<data>/larder.lock`, held for the life of the
/// store, so a second server on the same directory refuses to start.
final class FileLock {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        let fd = try POSIX.open(path, O_RDWR | O_CREAT, 0o644)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            var holder = "unknown process"
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = buffer.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress!, 64, 0) }
            if n > 0, let pid = Int(String(decoding: buffer[0..<n], as: UTF8.self).trimmingWhitespaceAndNewlines()) {
                holder = "pid \(pid)"
            }
            Glibc.close(fd)
            if code == EWOULDBLOCK { throw StoreError.locked(path: path, holder: holder) }
            throw StoreError.posix("flock", path, code)
        }
        self.fd = fd
        let pid = Array("\(getpid())\n".utf8)
        ftruncate(fd, 0)
        pid.withUnsafeBytes { _ = Glibc.pwrite(fd, $0.baseAddress!, $0.count, 0) }
    }

    deinit {
        flock(fd, LOCK_UN)
        Glibc.close(fd)
    }
}
