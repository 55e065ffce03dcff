import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// What the store knows about one stored value. It travels inside the
/// value file's gzip header (see `ValueFileHeader`), so one rename publishes
/// value and metadata together.
public struct ValueMetadata: Sendable, Equatable {
    public var key: String
    public var contentType: String
    /// Bytes of the value itself (decompressed).
    public var size: UInt64
    /// Unique per write; the ETag is derived from it.
    public var version: UInt64
    /// Unix time of the write, nanoseconds.
    public var modifiedNanos: Int64
    /// Unix time after which the value reads as absent, nanoseconds; nil: never.
    public var expiresNanos: Int64?
    /// For a body stored as the client's gzip: the client's own gzip header,
    /// given back in place of ours when the gzip bytes are sent.
    public var originalGzipHeader: [UInt8]?
    /// Bytes another face keeps with the value and the store never reads
    /// (the S3 face's ETag, checksum and headers), at most
    /// `maxAttributeBytes`; nil for a value written without any. A write
    /// that replaces the value drops them.
    public var attributes: [UInt8]?

    /// The most `attributes` may hold.
    public static let maxAttributeBytes = 8192

    public init(key: String, contentType: String, size: UInt64, version: UInt64,
                modifiedNanos: Int64, expiresNanos: Int64? = nil, originalGzipHeader: [UInt8]? = nil,
                attributes: [UInt8]? = nil) {
        self.key = key
        self.contentType = contentType
        self.size = size
        self.version = version
        self.modifiedNanos = modifiedNanos
        self.expiresNanos = expiresNanos
        self.originalGzipHeader = originalGzipHeader
        self.attributes = attributes
    }

    /// Strong ETag of the identity representation, quoted.
    public var etag: String { Self.etag(version: version) }

    /// The strong ETag of the identity representation of `version`.
    public static func etag(version: UInt64) -> String { VersionHex.format(version, before: "\"", after: "\"") }
    /// Strong ETag of the gzip representation (RFC 9110 8.8.3: another
    /// representation of the same version gets its own tag).
    public var gzipETag: String { VersionHex.format(version, before: "\"", after: "-gz\"") }

    public var modifiedSeconds: Int64 { modifiedNanos / 1_000_000_000 }

    /// Throws `invalidContentType` for a type no store keeps: longer than
    /// 1024 bytes, or with control bytes.
    package static func checkContentType(_ contentType: String) throws {
        guard contentType.utf8.count <= 1024 else { throw StoreError.invalidContentType("it is longer than 1024 bytes") }
        guard !contentType.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw StoreError.invalidContentType("it contains control bytes")
        }
    }

    public func isExpired(nowNanos: Int64) -> Bool { isExpired(now: nowNanos) }

    /// `isExpired(nowNanos:)` with the clock read only for a value that
    /// has an expiry (most have none, and a read of a namespace's clock is
    /// a call).
    @inlinable
    public func isExpired(now: @autoclosure () -> Int64) -> Bool {
        if let e = expiresNanos { return e <= now() }
        return false
    }
}

/// The gzip header of a value file: a standard RFC 1952 member header with
/// FEXTRA set, whose extra field holds the subfield `LR` with the metadata,
/// then `LA` with the attributes when there are any, then `LS` with a
/// segment table when the value is segmented.
///
///     1f 8b 08 04 | mtime(4)=0 | xfl=0 | os=3 | xlen(2) | 'L' 'R' | len(2) | payload
///     payload: format(1)=1, flags(1), size(8), version(8), modified(8),
///              expires(8, 0 = none), contentType(2+n), key(2+n), originalHeader(2+n)
///     'L' 'A' | len(2) | attributes
///
/// A reader that does not know a subfield skips it (files written before
/// `LA` existed read with no attributes).
///
/// All integers little-endian, as in gzip. Its length depends only on the
/// variable fields, so a writer can reserve it first and fill in size and
/// version at the end.
package enum ValueFileHeader {
    static let magic: [UInt8] = [0x1F, 0x8B]
    static let fixedPayload = 1 + 1 + 8 + 8 + 8 + 8
    /// Room for any legal header: XLEN is 16 bits.
    static let maxVariableBytes = 65_535 - 4 - fixedPayload - 6

    static let attributesID: (UInt8, UInt8) = (0x4C, 0x41)  // "LA"
    /// Where the version's 8 little-endian bytes sit in every header
    /// `encode` writes (after the gzip fields, XLEN, the `LR` subfield's
    /// id and length, format, flags and size): a store that learns the
    /// version only as it commits writes them there (`PostgresStore`).
    package static let versionOffset = 10 + 2 + 4 + 1 + 1 + 8

    /// Writes `version` and `modifiedNanos` into a header `encode` made
    /// (the modified time's 8 bytes follow the version's): a header made
    /// before either was known reads as if encoded with them.
    package static func stamp(_ header: inout [UInt8], version: UInt64, modifiedNanos: Int64) {
        let modified = UInt64(bitPattern: modifiedNanos)
        for i in 0..<8 {
            header[versionOffset + i] = UInt8(truncatingIfNeeded: version >> (8 * UInt64(i)))
            header[versionOffset + 8 + i] = UInt8(truncatingIfNeeded: modified >> (8 * UInt64(i)))
        }
    }

    static func length(of meta: ValueMetadata, segments: SegmentTable? = nil) -> Int {
        12 + 4 + recordLength(of: meta) + (meta.attributes.map { 4 + $0.count } ?? 0) + (segments?.encodedLength ?? 0)
    }

    /// Bytes of the `LR` subfield's payload.
    @inline(__always)
    private static func recordLength(of meta: ValueMetadata) -> Int {
        fixedPayload + 6 + meta.contentType.utf8.count + meta.key.utf8.count + (meta.originalGzipHeader?.count ?? 0)
    }

    /// Whether the metadata (and segment table) fit the gzip extra field (XLEN is 16 bits).
    static func fits(_ meta: ValueMetadata, segments: SegmentTable? = nil) -> Bool {
        length(of: meta, segments: segments) - 12 <= 65_535
    }

    static func encode(_ meta: ValueMetadata, segments: SegmentTable? = nil) -> [UInt8] {
        precondition(fits(meta, segments: segments), "metadata larger than a gzip extra field")
        let total = length(of: meta, segments: segments)
        let payloadLength = recordLength(of: meta)
        // Written in place into storage of the final size (every write
        // encodes a header: appends one byte at a time cost thousands of
        // instructions); the segment table, if any, goes after.
        var out = [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            var w = HeaderWriter(base: buffer.baseAddress!)
            // ID1 ID2 CM, FLG = FEXTRA, MTIME 0, XFL 0, OS 3 (Unix)
            w.byte(0x1F); w.byte(0x8B); w.byte(0x08); w.byte(0x04)
            w.le(0, 4)
            w.byte(0); w.byte(0x03)
            w.le(UInt64(total - 12), 2)
            w.byte(0x4C) // 'L'
            w.byte(0x52) // 'R'
            w.le(UInt64(payloadLength), 2)
            w.byte(1) // format
            w.byte(0) // flags
            w.le(meta.size, 8)
            w.le(meta.version, 8)
            w.le(UInt64(bitPattern: meta.modifiedNanos), 8)
            w.le(UInt64(bitPattern: meta.expiresNanos ?? 0), 8)
            w.field(meta.contentType.utf8)
            w.field(meta.key.utf8)
            w.field(meta.originalGzipHeader ?? [])
            if let attributes = meta.attributes {
                w.byte(attributesID.0)
                w.byte(attributesID.1)
                w.field(attributes)
            }
            count = w.written
        }
        segments?.encode(into: &out)
        assert(out.count == total)
        return out
    }

    /// Writes a header into storage sized for it (`length(of:)`).
    private struct HeaderWriter {
        let base: UnsafeMutablePointer<UInt8>
        var written = 0

        @inline(__always) mutating func byte(_ b: UInt8) {
            base[written] = b
            written += 1
        }

        @inline(__always) mutating func le(_ value: UInt64, _ bytes: Int) {
            for i in 0..<bytes { base[written + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
            written += bytes
        }

        /// A 2-byte little-endian length, then the bytes.
        @inline(__always) mutating func field<C: Collection<UInt8>>(_ bytes: C) {
            le(UInt64(bytes.count), 2)
            let copied = UnsafeMutableBufferPointer(start: base + written, count: bytes.count).initialize(fromContentsOf: bytes)
            written += copied
        }
    }

    /// The segment table in a complete header (`bytes` holds at least
    /// `headerLength` bytes), nil when it has none.
    static func segmentTable(_ bytes: UnsafeRawBufferPointer, headerLength: Int) -> SegmentTable? {
        guard bytes.count >= headerLength, headerLength >= 12 else { return nil }
        var offset = 12
        while offset + 4 <= headerLength {
            let len = Int(readLE(bytes, offset + 2, 2))
            let body = offset + 4
            guard body + len <= headerLength else { return nil }
            if bytes[offset] == SegmentTable.subfieldID.0 && bytes[offset + 1] == SegmentTable.subfieldID.1 {
                return SegmentTable.decode(bytes, body, len)
            }
            offset = body + len
        }
        return nil
    }

    package enum Parse {
        case complete(ValueMetadata, headerLength: Int)
        /// The buffer ends inside the header; at least this many bytes are needed.
        case needMore(Int)
    }

    package static func parse(_ bytes: UnsafeRawBufferPointer, path: String) throws -> Parse {
        guard bytes.count >= 12 else { return .needMore(12) }
        guard bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 0x08 else {
            throw StoreError.corrupt(path: path, reason: "not a gzip file")
        }
        guard bytes[3] & 0x04 != 0 else { throw StoreError.corrupt(path: path, reason: "no metadata in the gzip header") }
        let xlen = Int(readLE(bytes, 10, 2))
        guard bytes.count >= 12 + xlen else { return .needMore(12 + xlen) }
        // Find our subfield among the extra subfields.
        var offset = 12
        let end = 12 + xlen
        var found: ValueMetadata?
        var attributes: [UInt8]?
        while offset + 4 <= end {
            let id0 = bytes[offset], id1 = bytes[offset + 1]
            let len = Int(readLE(bytes, offset + 2, 2))
            let body = offset + 4
            guard body + len <= end else { break }
            if id0 == 0x4C && id1 == 0x52 {
                found = try decodePayload(bytes, body, len, path: path)
                // `LA`, when there is one, comes right after: nothing
                // further is read for a value without attributes.
                let next = body + len
                if next + 4 <= end, bytes[next] == attributesID.0, bytes[next + 1] == attributesID.1 {
                    let n = Int(readLE(bytes, next + 2, 2))
                    if next + 4 + n <= end { attributes = Array(bytes[(next + 4)..<(next + 4 + n)]) }
                }
                break
            }
            offset = body + len
        }
        guard var meta = found else { throw StoreError.corrupt(path: path, reason: "no metadata in the gzip header") }
        // FNAME, FCOMMENT, FHCRC never appear in headers we write.
        guard bytes[3] & ~0x04 == 0 else { throw StoreError.corrupt(path: path, reason: "unexpected gzip header flags") }
        meta.attributes = attributes
        return .complete(meta, headerLength: end)
    }

    private static func decodePayload(_ b: UnsafeRawBufferPointer, _ start: Int, _ len: Int, path: String) throws -> ValueMetadata {
        guard len >= fixedPayload + 6, b[start] == 1 else {
            throw StoreError.corrupt(path: path, reason: "unknown metadata format")
        }
        var p = start + 2
        let size = readLE(b, p, 8); p += 8
        let version = readLE(b, p, 8); p += 8
        let modified = Int64(bitPattern: readLE(b, p, 8)); p += 8
        let expires = Int64(bitPattern: readLE(b, p, 8)); p += 8
        var fields: [[UInt8]] = []
        let end = start + len
        for _ in 0..<3 {
            guard p + 2 <= end else { throw StoreError.corrupt(path: path, reason: "metadata is truncated") }
            let n = Int(readLE(b, p, 2)); p += 2
            guard p + n <= end else { throw StoreError.corrupt(path: path, reason: "metadata is truncated") }
            fields.append(Array(b[p..<(p + n)])); p += n
        }
        return ValueMetadata(
            key: String(decoding: fields[1], as: UTF8.self),
            contentType: String(decoding: fields[0], as: UTF8.self),
            size: size, version: version, modifiedNanos: modified,
            expiresNanos: expires == 0 ? nil : expires,
            originalGzipHeader: fields[2].isEmpty ? nil : fields[2])
    }

    /// The value file at `path`: its size, and its metadata unless the
    /// header is damaged. nil when there is no file (or no regular file).
    /// I/O errors throw; a damaged header does not, so a caller that can
    /// go on without the metadata (a delete) still knows the file is there.
    package static func inspect(path: String) throws -> ValueFileInfo? {
        var fd = POSIX.openPath(path, O_RDONLY | O_CLOEXEC | POSIX.noAccessTime)
        if fd < 0 && errno == EPERM { fd = POSIX.openPath(path, O_RDONLY | O_CLOEXEC) }  // a file someone else owns
        if fd < 0 {
            if errno == ENOENT || errno == ENOTDIR || errno == EISDIR { return nil }
            throw StoreError.posix("open", path)
        }
        defer { Glibc.close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw StoreError.posix("fstat", path) }
        guard POSIX.isRegularFile(st) else { return nil }
        var want = 4096
        while true {
            var buffer = [UInt8](repeating: 0, count: want)
            let n = try buffer.withUnsafeMutableBytes { try POSIX.pread(fd, $0, at: 0, path: path) }
            let parsed: Parse
            do {
                parsed = try buffer.withUnsafeBytes { try parse(UnsafeRawBufferPointer(rebasing: $0[0..<n]), path: path) }
            } catch let error as StoreError {
                return ValueFileInfo(fileSize: Int64(st.st_size), metadata: .failure(error))
            }
            switch parsed {
            case .complete(let meta, _):
                return ValueFileInfo(fileSize: Int64(st.st_size), metadata: .success(meta))
            case .needMore(let needed):
                guard n == want, needed > want else {
                    return ValueFileInfo(fileSize: Int64(st.st_size),
                                         metadata: .failure(.corrupt(path: path, reason: "the gzip header is truncated")))
                }
                want = needed
            }
        }
    }

    static func appendLE(_ out: inout [UInt8], _ value: UInt64, bytes: Int) {
        for i in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }

    static func readLE(_ b: UnsafeRawBufferPointer, _ offset: Int, _ bytes: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<bytes { v |= UInt64(b[offset + i]) << (8 * UInt64(i)) }
        return v
    }
}

/// A value file as found on disk (`ValueFileHeader.inspect`).
package struct ValueFileInfo {
    /// Bytes of the file: what the value costs on disk.
    package let fileSize: Int64
    /// The header's metadata, or why it cannot be read.
    package let metadata: Result<ValueMetadata, StoreError>

    package init(fileSize: Int64, metadata: Result<ValueMetadata, StoreError>) {
        self.fileSize = fileSize
        self.metadata = metadata
    }
}
