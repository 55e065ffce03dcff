/// Part of a value's gzip representation as it lies in its open file: the
/// bytes to send first from memory (a client's own gzip header, for a body
/// stored as sent), then `length` bytes of the file `fd` from `offset`.
/// Lets the server hand the stored bytes to `sendfile(2)` as they are.
public struct GzipFileRegion: Sendable {
    public let prefix: [UInt8]
    public let fd: Int32
    public let offset: Int64
    public let length: Int64
}

extension StoredValue {
    /// Bytes `start..<start + count` of the gzip representation (see
    /// `gzipLength`) as a file region; nil when no file is open (a value
    /// served from the cache). The descriptor stays the value's: it is
    /// valid until `close()`, which whoever sends the region must call.
    public func gzipRegion(start: Int64, count: Int64) -> GzipFileRegion? {
        guard fd >= 0, start >= 0, count >= 0, start + count <= Int64(gzipLength) else { return nil }
        // A body stored as sent: the client's header, then our file after our own header.
        let header = metadata.originalGzipHeader ?? []
        let fileStart = Int64(header.isEmpty ? 0 : headerLength)
        let prefixStart = Int(min(start, Int64(header.count)))
        let prefixEnd = Int(min(start + count, Int64(header.count)))
        let prefix = Array(header[prefixStart..<prefixEnd])
        let fileOffset = fileStart + max(0, start - Int64(header.count))
        return GzipFileRegion(prefix: prefix, fd: fd, offset: fileOffset, length: count - Int64(prefix.count))
    }
}
