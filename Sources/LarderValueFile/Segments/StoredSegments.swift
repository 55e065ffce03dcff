/// A large value's segments in stored mode (`CompressionMode.stored`: the
/// bytes look random), written as they arrive: each segment is stored
/// deflate blocks of the value's bytes (RFC 1951 3.2.4: BFINAL 0, BTYPE 00,
/// LEN, NLEN, the bytes), ended as zlib's sync flush ends one (an empty
/// stored block), so the file is the same standard gzip member, with the
/// same segment table and joinability, that zlib at level 0 makes; the
/// last segment then takes `SegmentTable.finalBlock`.
///
/// No zlib and no worker: the CRC and one copy (into the upload's pending
/// output) are all the work, done on the upload's thread.
struct StoredSegments {
    /// The most a stored block holds.
    static let maxBlock = 65_535
    /// The empty stored block a sync flush writes.
    static let syncFlush: [UInt8] = [0x00, 0x00, 0x00, 0xFF, 0xFF]

    let segmentSize: Int
    /// Value bytes in the segment being written, and its compressed bytes so far.
    private var inSegment = 0
    private var producedInSegment = 0

    init(segmentSize: Int) { self.segmentSize = segmentSize }

    /// Stores the next bytes of the value, updating the value's CRC and,
    /// as segments end, their compressed lengths.
    mutating func write(_ chunk: UnsafeRawBufferPointer, into crc: inout UInt32, lengths: inout [UInt32],
                        emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard chunk.count > 0 else { return }
        crc = CRC32.update(crc, chunk)
        var offset = 0
        while offset < chunk.count {
            // A full segment ends only once more bytes come: the last one is
            // the one `finish` ends, with the stream.
            if inSegment == segmentSize { try endSegment(lengths: &lengths, emit: emit) }
            let n = min(Self.maxBlock, segmentSize - inSegment, chunk.count - offset)
            try emitBlockHeader(length: n, emit: emit)
            try emit(UnsafeRawBufferPointer(rebasing: chunk[offset..<(offset + n)]))
            producedInSegment += n
            inSegment += n
            offset += n
        }
    }

    /// Ends the last segment and the deflate stream.
    mutating func finish(lengths: inout [UInt32], emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        // An empty value (or none after the last full segment) still has a
        // last segment: the sync flush and the final block.
        try endSegment(lengths: &lengths, emit: emit, last: true)
    }

    private mutating func endSegment(lengths: inout [UInt32], emit: (UnsafeRawBufferPointer) throws -> Void,
                                     last: Bool = false) throws {
        var tail = Self.syncFlush
        if last { tail += SegmentTable.finalBlock }
        try tail.withUnsafeBytes { try emit($0) }
        lengths.append(UInt32(producedInSegment + tail.count))
        inSegment = 0
        producedInSegment = 0
    }

    private mutating func emitBlockHeader(length: Int, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        let len = UInt16(length)
        let header: (UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0x00, UInt8(len & 0xFF), UInt8(len >> 8), UInt8(~len & 0xFF), UInt8(~len >> 8))
        try withUnsafeBytes(of: header) { try emit($0) }
        producedInSegment += 5
    }
}
