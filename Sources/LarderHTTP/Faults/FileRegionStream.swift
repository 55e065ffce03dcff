#if canImport(Glibc)
import Glibc
#endif

/// A file region read as a stream (its prefix, then `pread` of the file):
/// how a shaped answer (`ShapedBody`) sends what would otherwise go out
/// with `sendfile`, whose pieces it cannot count or hold back.
final class FileRegionStream: HTTPBodyStream {
    private let region: HTTPFileRegion
    private var prefixSent = 0
    private var offset: Int64
    private var remaining: Int64

    init(_ region: HTTPFileRegion) {
        self.region = region
        self.offset = region.offset
        self.remaining = region.length
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if prefixSent < region.prefix.count {
            let n = min(buffer.count, region.prefix.count - prefixSent)
            region.prefix.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + prefixSent, byteCount: n) }
            prefixSent += n
            return n
        }
        guard remaining > 0 else { return 0 }
        while true {
            let n = pread(region.fd, buffer.baseAddress!, Int(min(Int64(buffer.count), remaining)), off_t(offset))
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw SocketError("pread") }
            offset += Int64(n)
            remaining -= Int64(n)
            return n
        }
    }

    func close() { region.close() }
}
