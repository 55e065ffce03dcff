/// Where the independently deflated segments of a large value lie in its
/// file, so that segments can be inflated in parallel and a Range request
/// can start at the segment that holds its first byte.
///
/// A large value (its size known when the upload starts) is cut into
/// segments of `segmentSize` bytes. Each is deflated by a fresh stream with
/// no dictionary and ends byte-aligned (a sync flush; the last one ends the
/// deflate stream), so the segments together are still one deflate stream
/// in one gzip member that `zcat`, curl and browsers read as usual, and
/// each segment can also be inflated alone as raw deflate.
///
/// The table travels in the gzip header's extra field as a second subfield
/// `LS` after the metadata subfield `LR` (readers that do not know it skip
/// it, as RFC 1952 2.3.1.1 asks):
///
///     'L' 'S' | len(2) | segmentSize(4) | count(4) | count × compressedLength(4) | zero padding
///
/// The header is written before the value is compressed, so room for
/// `reserved` entries is set aside from the expected size; `count` entries
/// are filled in at the end and the rest stays padding.
///
/// The top bit of `segmentSize` says the value is **joinable**: its last
/// segment, too, ends with a sync flush, followed by a 2-byte empty final
/// block (`03 00`). Dropping those two bytes leaves a byte-aligned stream
/// that another value's segments can follow, so values cut into segments
/// of one size are joined into one without inflating or deflating a byte
/// (`ValueUpload.join`: a multipart upload's parts into its object). A
/// reader that does not know the bit sees a segment size too large to
/// trust, ignores the table and reads the value as one stream.
struct SegmentTable: Equatable, Sendable {
    /// Uncompressed bytes per segment (the last one may be shorter).
    let segmentSize: Int
    /// Compressed bytes of each segment, in order; filled in at the end.
    var lengths: [UInt32]
    /// Entries the header has room for.
    let reserved: Int
    /// The deflate data ends with `finalBlock`, after a sync flush.
    var joinable = true

    /// An empty final block of fixed Huffman codes, starting byte-aligned:
    /// BFINAL 1, BTYPE 01, end-of-block (seven 0 bits), padding.
    static let finalBlock: [UInt8] = [0x03, 0x00]
    private static let joinableBit: UInt64 = 1 << 31

    /// Segment size for values up to 2 GiB; larger values get larger
    /// segments so the table stays within the header. Small enough that a
    /// segment in flight (its input and output) costs half a MiB, large
    /// enough that a hand-off to a worker is about 1 % of its work and that
    /// restarting deflate's 32 KiB window costs little ratio.
    static let baseSegmentSize = 256 << 10
    /// Values below this are deflated as one stream, as small values always were.
    static let minimumValueSize: Int64 = 1 << 20
    /// At most this many entries (32 KiB of table): 1 GiB in 256 KiB
    /// segments takes 4,096.
    static let maximumEntries = 8192
    static let subfieldID: (UInt8, UInt8) = (0x4C, 0x53)  // "LS"

    /// A table with room for a value of `expectedSize` bytes, or nil when the
    /// value is too small to be worth segmenting.
    static func planned(forExpectedSize expectedSize: Int64) -> SegmentTable? {
        guard expectedSize >= minimumValueSize else { return nil }
        var size = baseSegmentSize
        while (expectedSize + Int64(size) - 1) / Int64(size) > Int64(maximumEntries) { size *= 2 }
        let entries = Int((expectedSize + Int64(size) - 1) / Int64(size))
        return SegmentTable(segmentSize: size, lengths: [], reserved: entries)
    }

    /// Bytes of the subfield in the extra field, its 4-byte subfield header included.
    var encodedLength: Int { 4 + 8 + 4 * reserved }

    func encode(into out: inout [UInt8]) {
        precondition(lengths.count <= reserved, "more segments than the header has room for")
        out.append(Self.subfieldID.0)
        out.append(Self.subfieldID.1)
        ValueFileHeader.appendLE(&out, UInt64(encodedLength - 4), bytes: 2)
        ValueFileHeader.appendLE(&out, UInt64(segmentSize) | (joinable ? Self.joinableBit : 0), bytes: 4)
        ValueFileHeader.appendLE(&out, UInt64(lengths.count), bytes: 4)
        for length in lengths { ValueFileHeader.appendLE(&out, UInt64(length), bytes: 4) }
        out.append(contentsOf: repeatElement(0, count: 4 * (reserved - lengths.count)))
    }

    /// The table in a subfield body of `length` bytes at `start`; nil when it
    /// is malformed (the value is then read as one stream, which is always valid).
    static func decode(_ b: UnsafeRawBufferPointer, _ start: Int, _ length: Int) -> SegmentTable? {
        guard length >= 8 else { return nil }
        let sizeField = ValueFileHeader.readLE(b, start, 4)
        let size = Int(sizeField & ~joinableBit)
        let count = Int(ValueFileHeader.readLE(b, start + 4, 4))
        guard size > 0, count > 0, 8 + 4 * count <= length else { return nil }
        let lengths = (0..<count).map { UInt32(ValueFileHeader.readLE(b, start + 8 + 4 * $0, 4)) }
        return SegmentTable(segmentSize: size, lengths: lengths, reserved: (length - 8) / 4,
                            joinable: sizeField & joinableBit != 0)
    }

    /// Whether the table describes a value of `size` bytes whose deflate data
    /// is `deflateBytes` long: anything else is ignored, not trusted.
    func matches(size: UInt64, deflateBytes: Int) -> Bool {
        // A damaged header may hold any size: compare without overflowing.
        guard segmentSize <= Self.largestSegmentSize, size <= UInt64(Int.max / 2) else { return false }
        let expectedCount = max(1, (Int(size) + segmentSize - 1) / segmentSize)
        return lengths.count == expectedCount && lengths.reduce(0, { $0 + Int($1) }) == deflateBytes
    }

    /// Uncompressed bytes of segment `index` in a value of `size` bytes.
    func uncompressedLength(of index: Int, valueSize: UInt64) -> Int {
        let start = UInt64(index) * UInt64(segmentSize)
        return Int(min(UInt64(segmentSize), valueSize - min(valueSize, start)))
    }

    /// The largest segment a table may claim: what `planned` makes for the
    /// largest value a 4-byte size field allows. A table claiming more is
    /// damaged and not trusted (a reader sizes its buffers from it).
    static let largestSegmentSize = 1 << 30
}
