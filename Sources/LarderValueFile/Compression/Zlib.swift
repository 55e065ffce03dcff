import LarderSupport
import CZlib
import LarderStoreVocabulary

/// Streaming raw deflate (no wrapper: the store writes its own gzip header
/// and trailer so it can carry metadata in the header's extra field).
/// Not thread-safe: one user at a time, pooled by `ZlibPool`.
final class Deflater {
    private var stream = z_stream()
    let level: Int32
    let strategy: Int32
    /// Sized for values of at most `smallValueBytes` (see `ZlibPool`).
    let isSmall: Bool

    /// Values up to this size are deflated by a small stream: a 4 KiB window
    /// holds every distance in them (the output is the same as with 32 KiB),
    /// and a 4,096-entry hash table is what `deflateReset` clears per value
    /// instead of 32,768 (64 KiB of memset was a third of a 1 KiB PUT's
    /// instructions). memLevel 5 still buffers 2,048 symbols per block, so a
    /// small value stays one block.
    static let smallValueBytes = 4 * 1024

    init(level: Int32, strategy: Int32 = Z_DEFAULT_STRATEGY, small: Bool = false) throws {
        self.level = level
        self.strategy = strategy
        self.isSmall = small
        let rc = deflateInit2_(&stream, level, Z_DEFLATED, small ? -12 : -MAX_WBITS, small ? 5 : 8, strategy,
                               ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        if rc != Z_OK { throw StoreError.zlib(operation: "deflateInit2", code: rc) }
    }

    deinit { deflateEnd(&stream) }

    func reset() { deflateReset(&stream) }

    /// One deflate call from `input` into `output`. With `finish`, call
    /// again (with the rest of the input, possibly none) until `ended`.
    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer,
              finish: Bool) throws -> (consumed: Int, produced: Int, ended: Bool) {
        try step(input, output, flush: finish ? Z_FINISH : Z_NO_FLUSH)
    }

    /// One deflate call with zlib's `flush` argument (`Z_SYNC_FLUSH` ends a
    /// segment on a byte boundary; call again until all input is consumed
    /// and the output was not filled).
    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer,
              flush: Int32) throws -> (consumed: Int, produced: Int, ended: Bool) {
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        stream.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.avail_out = uInt(output.count)
        let rc = deflate(&stream, flush)
        guard rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR else {
            throw StoreError.zlib(operation: "deflate", code: rc)
        }
        return (input.count - Int(stream.avail_in), output.count - Int(stream.avail_out), rc == Z_STREAM_END)
    }
}

/// Streaming gzip inflate (`MAX_WBITS + 16`), across concatenated members
/// as `zcat` does. Not thread-safe; pooled by `ZlibPool`.
final class Inflater {
    private var stream = z_stream()
    /// True between members: at the start, and after a member's trailer.
    private(set) var atMemberBoundary = true
    private var startedAnyMember = false

    init() throws {
        let rc = inflateInit2_(&stream, MAX_WBITS + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        if rc != Z_OK { throw StoreError.zlib(operation: "inflateInit2", code: rc) }
    }

    deinit { inflateEnd(&stream) }

    func reset() {
        inflateReset(&stream)
        atMemberBoundary = true
        startedAnyMember = false
    }

    /// Whether a complete stream (at least one whole member) has been seen.
    var isComplete: Bool { atMemberBoundary && startedAnyMember }

    /// One inflate call: consumes from `input`, writes into `output`.
    /// Crosses member boundaries like `zcat`. Throws `.invalidGzip` on bad data.
    func step(_ input: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer) throws -> (consumed: Int, produced: Int) {
        if atMemberBoundary {
            // Nothing pending between members; only new input starts the next.
            if input.count == 0 { return (0, 0) }
            if startedAnyMember { inflateReset(&stream) }
            atMemberBoundary = false
            startedAnyMember = true
        }
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        stream.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.avail_out = uInt(output.count)
        let rc = CZlib.inflate(&stream, Z_NO_FLUSH)
        let consumed = input.count - Int(stream.avail_in)
        let produced = output.count - Int(stream.avail_out)
        switch rc {
        case Z_STREAM_END:
            atMemberBoundary = true
        case Z_OK:
            break
        case Z_BUF_ERROR:
            // With no input this only means nothing was pending.
            if consumed == 0 && produced == 0 && input.count > 0 { throw StoreError.invalidGzip("the deflate data is inconsistent") }
        case Z_DATA_ERROR:
            let message = stream.msg.map { String(cString: $0) } ?? "data error"
            throw StoreError.invalidGzip(message)
        case Z_NEED_DICT:
            throw StoreError.invalidGzip("a preset dictionary is required")
        case Z_MEM_ERROR:
            throw StoreError.zlib(operation: "inflate", code: rc)
        default:
            throw StoreError.invalidGzip("zlib inflate returned \(rc)")
        }
        return (consumed, produced)
    }

    /// Inflates all of `input`, handing the output to `sink` in pieces of at
    /// most `scratch.count` bytes.
    func inflate(_ input: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
                 sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        var offset = 0
        while true {
            let (consumed, produced) = try step(UnsafeRawBufferPointer(rebasing: input[offset...]), scratch)
            offset += consumed
            if produced > 0 { try sink(UnsafeRawBufferPointer(rebasing: scratch[0..<produced])) }
            // A full scratch may mean more output is pending inside zlib.
            if produced == scratch.count { continue }
            if offset >= input.count || (consumed == 0 && produced == 0) { return }
        }
    }
}

enum CRC32 {
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard bytes.count > 0 else { return crc }
        return UInt32(CZlib.crc32(uLong(crc), bytes.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)))
    }

    /// The CRC of A followed by B, from the CRCs of A and B and B's length.
    static func combine(_ first: UInt32, _ second: UInt32, secondLength: Int) -> UInt32 {
        UInt32(CZlib.crc32_combine(uLong(first), uLong(second), .init(secondLength)))
    }
}

/// Reuses zlib streams: deflateInit allocates about 256 KiB, which would
/// dominate the cost of storing a 1 KiB value. Deflaters are kept per
/// `CompressionMode` rather than switched with `deflateParams`: before
/// zlib 1.2.12 that call could flush a block from a reset stream into the
/// last value's output buffer.
package final class ZlibPool: @unchecked Sendable {
    // Guarded by `lock`; one list per mode, at `CompressionMode.poolIndex`,
    // and one of small deflate streams (`Deflater.smallValueBytes`).
    private var deflaters: [[Deflater]] = CompressionMode.allCases.map { _ in [] }
    private var smallDeflaters: [Deflater] = []
    private var inflaters: [Inflater] = []
    private let lock = Lock()
    let level: Int32
    private let keep = 16

    package init(level: Int32) { self.level = level }

    func deflater(_ mode: CompressionMode) throws -> Deflater {
        let i = mode.poolIndex
        if let d = lock.withLock({ deflaters[i].popLast() }) { return d }
        let p = mode.parameters(configuredLevel: level)
        return try Deflater(level: p.level, strategy: p.strategy)
    }

    /// A deflate stream at the configured level for a value of at most
    /// `Deflater.smallValueBytes`.
    func smallDeflater() throws -> Deflater {
        if let d = lock.withLock({ smallDeflaters.popLast() }) { return d }
        return try Deflater(level: CompressionMode.deflate.parameters(configuredLevel: level).level, small: true)
    }

    func recycle(_ d: Deflater, _ mode: CompressionMode) {
        d.reset()
        let i = mode.poolIndex
        lock.withLock {
            if d.isSmall {
                if smallDeflaters.count < keep { smallDeflaters.append(d) }
            } else if deflaters[i].count < keep {
                deflaters[i].append(d)
            }
        }
    }

    func inflater() throws -> Inflater {
        if let i = lock.withLock({ inflaters.popLast() }) { return i }
        return try Inflater()
    }

    func recycle(_ i: Inflater) {
        i.reset()
        lock.withLock { if inflaters.count < keep { inflaters.append(i) } }
    }
}
