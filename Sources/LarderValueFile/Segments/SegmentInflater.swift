import CZlib
import LarderStoreVocabulary

/// Inflates one segment of a segmented value (see `SegmentTable`) as raw
/// deflate, whole: its compressed bytes in, exactly its uncompressed
/// length out. Anything else (more or fewer bytes, a stream that ends too
/// early or not at all) is a damaged file, never served as good data.
enum SegmentInflater {
    /// Inflates `input` into `output`, which has room for one byte more
    /// than `expected` (so a segment that inflates too long is caught).
    static func inflate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
                        expected: Int, isLast: Bool, path: String) throws -> Int {
        var stream = z_stream()
        let rc = inflateInit2_(&stream, -MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw StoreError.zlib(operation: "inflateInit2", code: rc) }
        defer { inflateEnd(&stream) }
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        stream.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.avail_out = uInt(output.count)
        var result = Z_OK
        // All input and enough room are there: zlib stops only at the end
        // of the input, of the stream, or of the room.
        while result == Z_OK && stream.avail_in > 0 && stream.avail_out > 0 {
            result = CZlib.inflate(&stream, Z_NO_FLUSH)
        }
        let produced = output.count - Int(stream.avail_out)
        func damaged(_ reason: String) -> StoreError { .corrupt(path: path, reason: reason) }
        switch result {
        case Z_STREAM_END where isLast:
            guard stream.avail_in == 0 else { throw damaged("data follows the end of the deflate stream") }
        case Z_STREAM_END:
            throw damaged("the deflate stream ends inside the value")
        case Z_OK, Z_BUF_ERROR:
            guard !isLast else { throw damaged("the deflate stream does not end") }
            guard stream.avail_in == 0 else { throw damaged("a segment inflates past its length") }
        case Z_MEM_ERROR:
            throw StoreError.zlib(operation: "inflate", code: result)
        default:
            throw damaged(stream.msg.map { String(cString: $0) } ?? "inflate returned \(result)")
        }
        guard produced == expected else { throw damaged("a segment inflates to \(produced) bytes, not \(expected)") }
        return produced
    }
}
