// ValueUpload's output: bytes gathered in `pending` after the header's placeholder, and written to the temp file (opened when first needed).

import Dispatch
import FoundationEssentials
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

extension ValueUpload {
    func reserveHeader() throws {
        let header = ValueFileHeader.encode(metadata, segments: segments)
        headerLength = header.count
        try append(header)
    }

    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    /// Copies bytes into `pending`, writing it out whenever it fills.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            if pending.room == 0 && !pending.grow() { try flush() }
            let n = min(pending.room, bytes.count - offset)
            pending.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
            offset += n
        }
    }

    /// Writes a segment's output as it is, after what is pending.
    func writeThrough(_ bytes: UnsafeRawBufferPointer) throws {
        if pending.count > 0 { try flush() }
        try openFileIfNeeded()
        try POSIX.writeAll(fd, bytes, path: tempPath)
        written += Int64(bytes.count)
        flushedAny = true
    }

    /// Makes the file of an upload that began in memory, before its first bytes go out.
    func openFileIfNeeded() throws {
        guard fd < 0, let openFile else { return }
        (tempPath, fd) = try openFile()
    }

    func flush() throws {
        try openFileIfNeeded()
        try POSIX.writeAll(fd, pending.bytes, path: tempPath)
        written += Int64(pending.count)
        pending.count = 0
        flushedAny = true
    }
}
