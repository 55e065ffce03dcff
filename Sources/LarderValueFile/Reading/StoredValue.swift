import LarderModel
import FoundationEssentials
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// A pull stream of bytes: `read` fills the buffer and returns the count,
/// 0 at the end. The HTTP layer sends response bodies from these.
public protocol ValueByteStream: AnyObject {
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Moves `count` bytes ahead without returning them (a Range request).
    func skip(_ count: Int64) throws
    func close()
}

extension ValueByteStream {
    public func skip(_ count: Int64) throws { try readAndDrop(count) }

    /// Reads and drops: what an inflating stream must do to move ahead,
    /// 64 KiB at a time, never holding the skipped part.
    public func readAndDrop(_ count: Int64) throws {
        guard count > 0 else { return }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { scratch.deallocate() }
        var left = count
        while left > 0 {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<Int(min(left, Int64(scratch.count)))]))
            if n == 0 { return }
            left -= Int64(n)
        }
    }
}

/// An open value file. Opening happens under the key's read lock; once the
/// descriptor is open, a concurrent replace or delete cannot change what
/// this reads (rename and unlink leave open files alone).
public final class StoredValue: @unchecked Sendable {
    /// Values up to this size are read in one go and served from memory.
    static let prefetchSize = 64 * 1024
    /// Values up to this size (decompressed) are answered from memory.
    static let maxInMemoryValue = 1 << 20

    public let metadata: ValueMetadata
    /// ETags of the identity and gzip representations.
    public let etag: String
    public let gzipETag: String
    /// Size of the gzip file on disk.
    public let fileSize: Int
    /// The layer this value came from; set by `LayeredStore`.
    // Unchecked exclusivity: set once by the store that opens the value,
    // before it is handed on; read on every GET from other modules, where
    // the runtime would otherwise track each access.
    @exclusivity(unchecked) public package(set) var source: ValueSource = .store
    /// Where what is derived from a value served from the cache is kept
    /// for its later hits; nil for a value read from its file.
    package let cacheMemo: CachedValueMemo?
    let headerLength: Int
    let path: String
    let zlib: ZlibPool
    /// The open value file; -1 once closed or for a cached value.
    private(set) var fd: Int32
    /// The file's first bytes; all of them when `fileSize <= prefetchSize`.
    private let prefetched: [UInt8]
    /// The value, when already decompressed (cached values).
    private var knownIdentity: [UInt8]?
    /// Where the segments of a large value lie, when it was deflated in
    /// segments and the table agrees with the file; nil otherwise.
    let segments: SegmentTable?

    /// A value served from memory; no file is open.
    package init(cached entry: ValueCache.Entry, zlib: ZlibPool) {
        self.fd = -1
        self.path = "(cache)"
        self.zlib = zlib
        self.metadata = entry.metadata
        self.etag = entry.etag
        self.gzipETag = entry.gzipETag
        self.fileSize = entry.file.count
        self.headerLength = entry.headerLength
        self.prefetched = entry.file
        self.knownIdentity = entry.identity
        self.segments = nil
        self.cacheMemo = entry.memo
    }

    /// The cache entry for a small value (inflating it now, once); nil when large.
    package func cacheEntry() throws -> ValueCache.Entry? {
        guard isFullyLoaded, fileSize <= ValueCache.maxFileSize, metadata.size <= UInt64(ValueCache.maxValueSize),
              let identity = try identityBytes() else { return nil }
        knownIdentity = identity
        close()
        return ValueCache.Entry(metadata: metadata, file: prefetched, headerLength: headerLength, identity: identity,
                                etag: etag, gzipETag: gzipETag)
    }

    /// The value file open at `fd` (the store's file, or a spool file a
    /// database value was copied into); its header is read now.
    package init(fd: Int32, path: String, zlib: ZlibPool) throws {
        self.cacheMemo = nil
        self.fd = fd
        self.path = path
        self.zlib = zlib
        do {
            fileSize = try POSIX.fileSize(fd, path: path)
            var buffer = [UInt8](repeating: 0, count: min(fileSize, Self.prefetchSize))
            var n = try buffer.withUnsafeMutableBytes { (raw) in try POSIX.pread(fd, raw, at: 0, path: path) }
            buffer.removeLast(buffer.count - n)
            var parsed = try buffer.withUnsafeBytes { (raw) in try ValueFileHeader.parse(raw, path: path) }
            if case .needMore(let needed) = parsed, needed <= fileSize, needed > buffer.count {
                buffer = [UInt8](repeating: 0, count: needed)
                n = try buffer.withUnsafeMutableBytes { (raw) in try POSIX.pread(fd, raw, at: 0, path: path) }
                buffer.removeLast(buffer.count - n)
                parsed = try buffer.withUnsafeBytes { (raw) in try ValueFileHeader.parse(raw, path: path) }
            }
            (metadata, headerLength, segments) = try Self.header(parsed, buffer, fileSize: fileSize, path: path)
            etag = metadata.etag
            gzipETag = metadata.gzipETag
            prefetched = buffer
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// A whole value file held in memory (a value read from a database);
    /// no file is open. `origin` names it in errors.
    package init(fileBytes: [UInt8], origin: String, zlib: ZlibPool) throws {
        self.cacheMemo = nil
        self.fd = -1
        self.path = origin
        self.zlib = zlib
        fileSize = fileBytes.count
        let parsed = try fileBytes.withUnsafeBytes { (raw) in try ValueFileHeader.parse(raw, path: origin) }
        (metadata, headerLength, segments) = try Self.header(parsed, fileBytes, fileSize: fileSize, path: origin)
        etag = metadata.etag
        gzipETag = metadata.gzipETag
        prefetched = fileBytes
    }

    /// The metadata, header length and usable segment table of a parsed header.
    private static func header(_ parsed: ValueFileHeader.Parse, _ buffer: [UInt8], fileSize: Int,
                               path: String) throws -> (ValueMetadata, Int, SegmentTable?) {
        guard case .complete(let meta, let length) = parsed else {
            throw StoreError.corrupt(path: path, reason: "the gzip header is truncated")
        }
        let table = meta.originalGzipHeader != nil ? nil : buffer.withUnsafeBytes { (raw) in
            ValueFileHeader.segmentTable(raw, headerLength: length)
        }
        let deflateBytes = fileSize - length - 8
        return (meta, length, table.flatMap { $0.matches(size: meta.size, deflateBytes: deflateBytes) ? $0 : nil })
    }

    deinit { close() }

    public func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    var isFullyLoaded: Bool { prefetched.count == fileSize }

    /// Length of the gzip representation: the file, or for a body stored as
    /// sent, the client's header followed by the file after ours.
    public var gzipLength: Int {
        if let original = metadata.originalGzipHeader { return original.count + fileSize - headerLength }
        return fileSize
    }

    /// Whether the gzip form is no smaller than the value (a tiny value,
    /// whose gzip header and metadata outweigh what deflate saves, or bytes
    /// that do not compress): such a value is answered as identity even to
    /// a client that accepts gzip (docs/http-api.md allows it). Decided from sizes
    /// known since `open` (the file's size and the metadata), so a read pays
    /// no extra I/O for it; an incompressible value is stored deflated in
    /// stored blocks, so answering it inflated is close to a copy.
    public var gzipSavesNothing: Bool {
        gzipLength >= Int(clamping: metadata.size)
    }

    /// The gzip representation in memory, for small values; nil when large.
    public func gzipBytes() -> [UInt8]? {
        guard isFullyLoaded else { return nil }
        if let original = metadata.originalGzipHeader { return original + prefetched[headerLength...] }
        return prefetched
    }

    /// The value in memory, for small values; nil when large.
    public func identityBytes() throws -> [UInt8]? {
        if let knownIdentity { return knownIdentity }
        // Larger values stream, so one connection never holds much.
        guard isFullyLoaded, metadata.size <= UInt64(Self.maxInMemoryValue) else { return nil }
        let inflater = try zlib.inflater()
        defer { zlib.recycle(inflater) }
        let total = Int(metadata.size)
        var out = [UInt8](repeating: 0, count: total)
        var produced = 0
        var consumed = 0
        try prefetched.withUnsafeBytes { (input) in
            try out.withUnsafeMutableBytes { (output) in
                while consumed < input.count {
                    // One spare byte of room reveals a value longer than its metadata says.
                    if produced == total {
                        var spare: UInt8 = 0
                        let extra = try withUnsafeMutableBytes(of: &spare) { (s) in
                            try inflater.step(UnsafeRawBufferPointer(rebasing: input[consumed...]), s)
                        }
                        if extra.produced > 0 { throw StoreError.corrupt(path: path, reason: "the value is longer than recorded") }
                        consumed += extra.consumed
                        if extra.consumed == 0 { break }
                        continue
                    }
                    let r = try inflater.step(UnsafeRawBufferPointer(rebasing: input[consumed...]),
                                              UnsafeMutableRawBufferPointer(rebasing: output[produced...]))
                    consumed += r.consumed
                    produced += r.produced
                    if r.consumed == 0 && r.produced == 0 { break }
                }
            }
        }
        guard produced == total, inflater.isComplete else {
            throw StoreError.corrupt(path: path, reason: "the value decompresses to \(produced) bytes, not \(total)")
        }
        return out
    }

    /// The whole value, decompressed, however large (the caller bounds it).
    public func readAll() throws -> [UInt8] {
        if let small = try identityBytes() { return small }
        let stream = try identityStream()
        defer { stream.close() }
        var out = [UInt8](repeating: 0, count: Int(metadata.size))
        var filled = 0
        try out.withUnsafeMutableBytes { raw in
            while filled < raw.count {
                let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
                if n == 0 { break }
                filled += n
            }
        }
        guard filled == out.count else { throw StoreError.corrupt(path: path, reason: "the value ends early") }
        return out
    }

    /// Throws `.corrupt` unless the file ends in a gzip trailer whose size
    /// field is the value's (modulo 2^32, as gzip keeps it). One read of 8
    /// bytes: it finds a truncated file (the usual damage: a copy cut short,
    /// a crash on a filesystem that does not journal data) before any byte
    /// of the value is sent. Other damage shows when the value is inflated
    /// (identity reads check the CRC; gzip clients check it too).
    ///
    /// Only for files Larder compressed, which are one gzip member: a body
    /// stored as the client sent it may hold several members (`cat a.gz
    /// b.gz`), whose last trailer gives only the last member's size.
    public func checkTrailer() throws {
        // A value from the cache was inflated whole (CRC and size checked)
        // when it went in.
        guard metadata.originalGzipHeader == nil, knownIdentity == nil else { return }
        var recorded: UInt64?
        if fileSize >= headerLength + 8 {
            if isFullyLoaded {
                recorded = prefetched.withUnsafeBytes { ValueFileHeader.readLE($0, fileSize - 4, 4) }
            } else {
                var bytes = (UInt64(0), ())
                let n = try withUnsafeMutableBytes(of: &bytes.0) { try read(into: $0, at: fileSize - 8) }
                recorded = n == 8 ? withUnsafeBytes(of: &bytes.0) { ValueFileHeader.readLE($0, 4, 4) } : nil
            }
        }
        guard recorded == metadata.size & 0xFFFF_FFFF else {
            throw StoreError.corrupt(path: path, reason: "the file is truncated or damaged (its gzip trailer does not give the value's size)")
        }
    }

    /// Streams the gzip representation from disk.
    public func gzipStream() -> ValueByteStream {
        GzipFileStream(value: self, prefix: metadata.originalGzipHeader ?? [],
                       start: metadata.originalGzipHeader == nil ? 0 : headerLength)
    }

    /// Streams the value, decompressing while it reads: a segmented value
    /// several segments at a time, on every core.
    public func identityStream() throws -> ValueByteStream {
        if let segments, knownIdentity == nil {
            return SegmentedInflatingStream(value: self, table: segments, dataStart: headerLength)
        }
        return try InflatingFileStream(value: self, inflater: try zlib.inflater())
    }

    /// Appends `count` bytes of the file from `offset` to `destination` at
    /// its file offset: in the kernel for a file, written out for a value
    /// held in memory.
    func copy(from offset: Int, count: Int, to destination: Int32, path destinationPath: String) throws {
        guard fd >= 0 else {
            guard isFullyLoaded, offset + count <= prefetched.count else {
                throw StoreError.corrupt(path: path, reason: "the value is not held whole in memory")
            }
            try prefetched.withUnsafeBytes { raw in
                try POSIX.writeAll(destination, UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)]), path: destinationPath)
            }
            return
        }
        try POSIX.copyRange(fd, at: offset, count: count, to: destination, sourcePath: path, destinationPath: destinationPath)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        guard fd >= 0 else {
            // A value held in memory reads from there.
            guard isFullyLoaded, offset < prefetched.count, buffer.count > 0 else { return 0 }
            let n = min(buffer.count, prefetched.count - offset)
            prefetched.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
            return n
        }
        return try POSIX.pread(fd, buffer, at: offset, path: path)
    }
}

/// The gzip file's bytes as they are (with the client's header in front
/// for a body stored as sent).
final class GzipFileStream: ValueByteStream {
    private let value: StoredValue
    private var prefix: [UInt8]
    private var offset: Int

    init(value: StoredValue, prefix: [UInt8], start: Int) {
        self.value = value
        self.prefix = prefix
        self.offset = start
    }

    func skip(_ count: Int64) throws {
        var left = Int(count)
        let fromPrefix = min(left, prefix.count)
        prefix.removeFirst(fromPrefix)
        left -= fromPrefix
        offset += left
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if !prefix.isEmpty {
            let n = min(prefix.count, buffer.count)
            prefix.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: n) }
            prefix.removeFirst(n)
            return n
        }
        let n = try value.read(into: buffer, at: offset)
        offset += n
        return n
    }

    func close() { value.close() }
}

/// The value, inflated from the file in 64 KiB reads.
final class InflatingFileStream: ValueByteStream {
    private let value: StoredValue
    private var inflater: Inflater?
    private let input: UnsafeMutableRawBufferPointer
    private var inputStart = 0
    private var inputEnd = 0
    private var fileOffset = 0
    private var produced: UInt64 = 0

    init(value: StoredValue, inflater: Inflater) throws {
        self.value = value
        self.inflater = inflater
        self.input = .allocate(byteCount: 1 << 16, alignment: 16)
    }

    deinit {
        close()
        input.deallocate()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let inflater else { return 0 }
        while true {
            if inputStart == inputEnd {
                // Output zlib could not hand over last time (the buffer was full).
                let pending = try inflater.step(UnsafeRawBufferPointer(start: nil, count: 0), buffer)
                if pending.produced > 0 {
                    produced += UInt64(pending.produced)
                    return pending.produced
                }
                let n = try value.read(into: input, at: fileOffset)
                fileOffset += n
                inputStart = 0
                inputEnd = n
                if n == 0 {
                    guard inflater.isComplete, produced == value.metadata.size else {
                        throw StoreError.corrupt(path: value.path, reason: "the gzip data ends early")
                    }
                    return 0
                }
            }
            let r = try inflater.step(UnsafeRawBufferPointer(rebasing: input[inputStart..<inputEnd]), buffer)
            inputStart += r.consumed
            produced += UInt64(r.produced)
            if r.produced > 0 { return r.produced }
            if r.consumed == 0 { throw StoreError.corrupt(path: value.path, reason: "inflate made no progress") }
        }
    }

    func close() {
        if let i = inflater { value.zlib.recycle(i); inflater = nil }
        value.close()
    }
}
