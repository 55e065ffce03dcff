#if canImport(Glibc)
import Glibc
#endif
import LarderSupport

/// A connection's input and output buffers, as whole pages mapped from the
/// kernel (not from malloc, whose chunk headers would keep a page of every
/// buffer resident): an idle keep-alive connection gives the pages back
/// (`release`) and keeps the mapping, so thousands of idle connections
/// cost a few KiB each, and its next request touches fresh zeroed pages.
///
/// Buffers of the standard size (`standardBytes`) are kept for reuse when
/// a connection closes, up to `kept` of them, so that connections made and
/// closed one after another (a client per request) map nothing.
enum PageMemory {
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    static let standardBytes = 64 * 1024
    static let kept = 64

    // Guarded by `lock`: mappings of `standardBytes` no connection holds.
    nonisolated(unsafe) private static var spare: [UnsafeMutableRawBufferPointer] = []
    private static let lock = Lock()

    /// At least `bytes`, rounded up to whole pages.
    static func allocate(_ bytes: Int) -> UnsafeMutableRawBufferPointer {
        let size = (max(bytes, 1) + pageSize - 1) / pageSize * pageSize
        if size == standardBytes, let reused = lock.withLock({ spare.popLast() }) { return reused }
        guard let base = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              base != MAP_FAILED else {
            // Out of address space or mappings: as malloc would fail, so does the server.
            fatalError("mmap of \(size) bytes failed: errno \(errno)")
        }
        return UnsafeMutableRawBufferPointer(start: base, count: size)
    }

    static func deallocate(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        if buffer.count == standardBytes {
            let kept = lock.withLock { () -> Bool in
                guard spare.count < Self.kept else { return false }
                spare.append(buffer)
                return true
            }
            if kept { return }
        }
        munmap(base, buffer.count)
    }

    /// Gives the buffer's pages back to the kernel; the mapping stays and
    /// reads as zeros (`madvise(MADV_DONTNEED)`).
    static func release(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        _ = madvise(base, buffer.count, MADV_DONTNEED)
    }
}
