import LarderStoreVocabulary
/// Finds where the header of a client's gzip member ends (RFC 1952 2.3), so
/// an upload sent with `Content-Encoding: gzip` can keep the client's deflate
/// data and trailer byte for byte behind a header of our own.
enum GzipMemberHeader {
    enum Result: Equatable {
        case complete(length: Int)
        case needMore
    }

    package static func parse(_ b: [UInt8]) throws -> Result {
        guard b.count >= 10 else {
            if b.count >= 1 && b[0] != 0x1F || b.count >= 2 && b[1] != 0x8B {
                throw StoreError.invalidGzip("the body does not start with the gzip magic bytes")
            }
            return .needMore
        }
        guard b[0] == 0x1F, b[1] == 0x8B else { throw StoreError.invalidGzip("the body does not start with the gzip magic bytes") }
        guard b[2] == 8 else { throw StoreError.invalidGzip("unknown compression method \(b[2])") }
        let flags = b[3]
        guard flags & 0xE0 == 0 else { throw StoreError.invalidGzip("reserved header flags are set") }
        var p = 10
        if flags & 0x04 != 0 {
            guard b.count >= p + 2 else { return .needMore }
            let xlen = Int(b[p]) | Int(b[p + 1]) << 8
            p += 2 + xlen
            guard b.count >= p else { return .needMore }
        }
        for flag: UInt8 in [0x08, 0x10] where flags & flag != 0 {
            // Zero-terminated FNAME / FCOMMENT.
            guard let zero = b[p...].firstIndex(of: 0) else { return .needMore }
            p = zero + 1
        }
        if flags & 0x02 != 0 {
            p += 2
            guard b.count >= p else { return .needMore }
        }
        return .complete(length: p)
    }
}
