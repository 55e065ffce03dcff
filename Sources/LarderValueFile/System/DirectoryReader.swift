import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Streams a directory's entries (`readdir`), `.` and `..` left out: the
/// one place that reads a `dirent`.
///
/// An entry is read in place, through its address. A `dirent` is only
/// `d_reclen` bytes long (its name rounded up), not `MemoryLayout<dirent>`'s
/// 280: copying the whole struct or its 256-byte `d_name` (as
/// `withUnsafeBytes(of: entry.pointee.d_name)` does) reads past the last
/// entry of readdir's buffer. AddressSanitizer reports it as a heap buffer
/// overflow; without it, the server crashed when that buffer ended at the
/// end of a mapped page (a restore's publish, CI 2026-11-30).
package final class DirectoryReader {
    private let dir: OpaquePointer
    /// The directory read, to which the names are relative.
    package let path: String

    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    private static let typeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type)!

    /// nil when the directory does not exist (or `path` is not one); other
    /// failures throw.
    package init?(_ path: String) throws {
        guard let dir = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw StoreError.posix("opendir", path)
        }
        self.dir = dir
        self.path = path
    }

    deinit { closedir(dir) }

    /// The next entry: its name's bytes and whether it is a directory (from
    /// `d_type`, or `lstat` where the file system does not say; an entry
    /// gone before that is passed over). nil at the end.
    package func next() -> (name: [UInt8], isDirectory: Bool)? {
        while let entry = readdir(dir) {
            let raw = UnsafeRawPointer(entry)
            let namePointer = (raw + Self.nameOffset).assumingMemoryBound(to: CChar.self)
            let name = Array(UnsafeRawBufferPointer(start: namePointer, count: strlen(namePointer)))
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            let type = raw.load(fromByteOffset: Self.typeOffset, as: UInt8.self)
            if type != UInt8(DT_UNKNOWN) { return (name, type == UInt8(DT_DIR)) }
            guard let st = try? POSIX.lstatIfExists(path + "/" + String(decoding: name, as: UTF8.self)) else { continue }
            return (name, POSIX.isDirectory(st))
        }
        return nil
    }
}
