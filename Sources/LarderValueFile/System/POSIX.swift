import FoundationEssentials
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// Thin wrappers over the system calls the store uses, turning `-1` into a
/// `StoreError` that names the call, the path and errno.
package enum POSIX {
    /// open(2) on a Swift path without the heap copy that passing a String
    /// as a C string makes (`withCString` lends its own storage): a PUT
    /// opens and renames paths several times, each a malloc/free saved.
    package static func openPath(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        path.withCString { Glibc.open($0, flags, mode) }
    }

    /// rename(2) on Swift paths, without heap copies (see `openPath`).
    package static func renamePath(_ from: String, _ to: String) -> Int32 {
        from.withCString { f in to.withCString { t in Glibc.rename(f, t) } }
    }

    package static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) throws -> Int32 {
        while true {
            let fd = openPath(path, flags | O_CLOEXEC, mode)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw StoreError.posix("open", path)
        }
    }

    /// Writes every byte (at the file offset, or at `position` with
    /// pwrite) or throws.
    package static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at position: Int? = nil, path: String) throws {
        var offset = 0
        while offset < buffer.count {
            let start = buffer.baseAddress! + offset, count = buffer.count - offset
            let n = position.map { Glibc.pwrite(fd, start, count, off_t($0 + offset)) } ?? Glibc.write(fd, start, count)
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.posix(position == nil ? "write" : "pwrite", path)
            }
            offset += n
        }
    }

    /// Reads up to `buffer.count` bytes at `position`; fewer only at end of file.
    package static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at position: Int, path: String) throws -> Int {
        var total = 0
        while total < buffer.count {
            let n = Glibc.pread(fd, buffer.baseAddress! + total, buffer.count - total, off_t(position + total))
            if n < 0 {
                if errno == EINTR { continue }
                throw StoreError.posix("read", path)
            }
            if n == 0 { break }
            total += n
        }
        return total
    }

    /// Copies `count` bytes of `source` from `offset` to `destination` at
    /// its file offset, in the kernel (sendfile(2), which takes a file as
    /// its destination since Linux 2.6.33: no pass through user space), or
    /// by pread and write where the kernel cannot. (copy_file_range(2) is
    /// not in Swift's Glibc module: it needs _GNU_SOURCE.)
    package static func copyRange(_ source: Int32, at offset: Int, count: Int, to destination: Int32,
                                  sourcePath: String, destinationPath: String) throws {
        var from = off_t(offset)
        var left = count
        while left > 0 {
            let n = Glibc.sendfile(destination, source, &from, min(left, 1 << 30))
            if n > 0 { left -= n; continue }
            if n == 0 { throw StoreError.corrupt(path: sourcePath, reason: "the file ends \(left) bytes early") }
            let code = errno
            if code == EINTR { continue }
            guard code == EXDEV || code == ENOSYS || code == EINVAL || code == EOPNOTSUPP else {
                throw StoreError.posix("sendfile", destinationPath, code)
            }
            break
        }
        guard left > 0 else { return }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: min(left, 256 << 10), alignment: 16)
        defer { buffer.deallocate() }
        while left > 0 {
            let n = try pread(source, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(left, buffer.count)]),
                              at: Int(from), path: sourcePath)
            if n == 0 { throw StoreError.corrupt(path: sourcePath, reason: "the file ends \(left) bytes early") }
            try writeAll(destination, UnsafeRawBufferPointer(rebasing: buffer[0..<n]), path: destinationPath)
            from += off_t(n)
            left -= n
        }
    }

    package static func fsync(_ fd: Int32, path: String) throws {
        if Glibc.fsync(fd) != 0 { throw StoreError.posix("fsync", path) }
    }

    /// fsync a directory so a rename or create inside it survives power loss.
    package static func fsyncDirectory(_ path: String) throws {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { Glibc.close(fd) }
        try fsync(fd, path: path)
    }

    /// O_NOATIME, which glibc defines only with _GNU_SOURCE. Reading a value
    /// file's header for bookkeeping must not dirty its inode: with relatime
    /// the first read after a write updates the access time, a journal
    /// write for a file that a replacing write is about to unlink.
    static let noAccessTime: Int32 = 0o1000000

    package static func fileSize(_ fd: Int32, path: String) throws -> Int {
        var st = stat()
        if fstat(fd, &st) != 0 { throw StoreError.posix("fstat", path) }
        return Int(st.st_size)
    }

    /// lstat; nil when the path does not exist.
    package static func lstatIfExists(_ path: String) throws -> stat? {
        var st = stat()
        if Glibc.lstat(path, &st) == 0 { return st }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw StoreError.posix("lstat", path)
    }

    /// stat, following symbolic links; nil when the path (or its target) does not exist.
    package static func statIfExists(_ path: String) throws -> stat? {
        var st = stat()
        if stat(path, &st) == 0 { return st }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw StoreError.posix("stat", path)
    }

    package static func isDirectory(_ st: stat) -> Bool { (st.st_mode & S_IFMT) == S_IFDIR }
    package static func isRegularFile(_ st: stat) -> Bool { (st.st_mode & S_IFMT) == S_IFREG }

    /// Names in a directory, without `.` and `..`. nil when it does not exist.
    package static func directoryEntries(_ path: String) throws -> [(name: [UInt8], isDirectory: Bool)]? {
        guard let reader = try DirectoryReader(path) else { return nil }
        var result: [(name: [UInt8], isDirectory: Bool)] = []
        while let entry = reader.next() { result.append(entry) }
        return result
    }

    /// Deletes a file tree without following links. Errors on single entries
    /// are skipped: this runs on trash the store has already let go of.
    package static func removeTree(_ path: String) {
        if let entries = try? directoryEntries(path) {
            for entry in entries {
                let child = path + "/" + String(decoding: entry.name, as: UTF8.self)
                if entry.isDirectory { removeTree(child) } else { unlink(child) }
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
