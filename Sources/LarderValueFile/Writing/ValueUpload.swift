import Dispatch
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

/// One value being written: the body streams through here into a temp file
/// in the key's directory, then `finish` makes it durable and publishes it.
/// A store that copies the finished value elsewhere (PostgreSQL) may have
/// no file made for a small one: the file is opened only once the bytes
/// outgrow memory (`init(…, openFileWhenNeeded:)`).
///
/// Used by one thread at a time (the connection's queue); not Sendable.
/// Its state is `@exclusivity(unchecked)` for that reason: no call made
/// while a property is being changed reaches the upload again, and the
/// runtime's tracking of every access cost about 40 checks a small PUT.
public final class ValueUpload: ValueWriter {
    public enum Encoding: Sendable {
        /// The body is the value; the store compresses it.
        case identity
        /// The body is gzip already: verified, then kept as sent.
        case gzip
    }

    /// Output is written to the file in pieces of about this size.
    static let flushThreshold = 256 * 1024

    /// Where the finished file goes (the disk store, the PostgreSQL store).
    let destination: any UploadDestination
    public let key: StoreKey
    @exclusivity(unchecked) package internal(set) var metadata: ValueMetadata
    let encoding: Encoding
    @exclusivity(unchecked) package internal(set) var tempPath: String
    /// -1 while a value kept in memory has no file yet (`openFile`).
    @exclusivity(unchecked) package internal(set) var fd: Int32
    /// Opens the file when the first bytes go out, for a value that starts
    /// in memory; nil when the file was given open.
    let openFile: (() throws -> (path: String, fd: Int32))?
    /// Bytes not yet written; begins with the header placeholder until the
    /// first flush.
    @exclusivity(unchecked) var pending = PendingBytes(capacity: 16 * 1024, limit: ValueUpload.flushThreshold + 128 * 1024)
    @exclusivity(unchecked) var flushedAny = false
    @exclusivity(unchecked) package internal(set) var headerLength = 0
    @exclusivity(unchecked) var size: UInt64 = 0
    /// Bytes written to the temp file so far: at the end, the whole value
    /// file's size (on disk, or in memory: `bytesInMemory`).
    @exclusivity(unchecked) package internal(set) var written: Int64 = 0
    @exclusivity(unchecked) var crc: UInt32 = 0
    @exclusivity(unchecked) var deflater: Deflater?
    /// The value is one stored deflate block written here, no zlib
    /// (`UploadDestination.storesSmallValuesUncompressed`), and whether
    /// that block is written yet.
    @exclusivity(unchecked) var storedWhole = false
    @exclusivity(unchecked) var storedBlockWritten = false
    /// identity mode: how the value is compressed, nil until the sample is
    /// in (nothing is deflated before, so the choice covers every byte).
    @exclusivity(unchecked) var mode: CompressionMode?
    /// identity mode: the value's first bytes while `mode` is undecided.
    /// Starts at 4 KiB so that a small value costs a small allocation.
    @exclusivity(unchecked) var sample: PendingBytes?
    @exclusivity(unchecked) var inflater: Inflater?
    /// identity mode, for a large value of known size: where its segments
    /// will lie (room for the table is in the header), and the deflater that
    /// makes them on several cores. nil: one deflate stream, as for any
    /// value of unknown or small size.
    @exclusivity(unchecked) var segments: SegmentTable?
    @exclusivity(unchecked) var segmenter: SegmentedDeflater?
    /// identity mode: what `join` appended, before any byte the segmenter
    /// made: the segments' compressed lengths, the bytes' CRC and count.
    @exclusivity(unchecked) var joinedLengths: [UInt32] = []
    @exclusivity(unchecked) var joinedCRC: UInt32 = 0
    @exclusivity(unchecked) var joinedSize: UInt64 = 0
    /// The last value joined kept its final block: the deflate stream ended.
    @exclusivity(unchecked) var joinedEnd = false
    /// gzip mode: the client's first header, until it is complete.
    @exclusivity(unchecked) var clientHeader: [UInt8]? = nil
    @exclusivity(unchecked) var scratch: UnsafeMutableRawBufferPointer?
    @exclusivity(unchecked) var done = false
    /// Largest value accepted, decompressed.
    let maxSize: Int64
    /// Checked against the current value at the moment of publishing.
    package let condition: WriteCondition?

    /// For a value created under a generated key by a store that names the
    /// key when the write commits: the prefix (`key` is a placeholder of
    /// the same length until then).
    package var generatedKeyPrefix: String?

    package convenience init(destination: any UploadDestination, key: StoreKey, metadata: ValueMetadata, encoding: Encoding,
                             tempPath: String, fd: Int32, maxSize: Int64, condition: WriteCondition?) throws {
        try self.init(destination: destination, key: key, metadata: metadata, encoding: encoding, tempPath: tempPath, fd: fd,
                      openFile: nil, maxSize: maxSize, condition: condition)
    }

    /// An upload with no file until its bytes outgrow memory (about
    /// `flushThreshold`): `openFileWhenNeeded` makes one then. A value
    /// that never does stays in memory when complete (`bytesInMemory`), and
    /// costs no file at all.
    package convenience init(destination: any UploadDestination, key: StoreKey, metadata: ValueMetadata, encoding: Encoding,
                             maxSize: Int64, condition: WriteCondition?,
                             openFileWhenNeeded: @escaping () throws -> (path: String, fd: Int32)) throws {
        try self.init(destination: destination, key: key, metadata: metadata, encoding: encoding, tempPath: "(not opened yet)",
                      fd: -1, openFile: openFileWhenNeeded, maxSize: maxSize, condition: condition)
    }

    private init(destination: any UploadDestination, key: StoreKey, metadata: ValueMetadata, encoding: Encoding,
                 tempPath: String, fd: Int32, openFile: (() throws -> (path: String, fd: Int32))?, maxSize: Int64,
                 condition: WriteCondition?) throws {
        self.openFile = openFile
        self.maxSize = maxSize
        self.condition = condition
        self.destination = destination
        self.key = key
        self.metadata = metadata
        self.encoding = encoding
        self.tempPath = tempPath
        self.fd = fd
        switch encoding {
        case .identity:
            // The deflater comes once the mode is chosen (`decide`).
            do { try reserveHeader() } catch { abort(); throw error }
        case .gzip:
            do { inflater = try destination.zlib.inflater() } catch { abort(); throw error }
            clientHeader = []
            scratch = .allocate(byteCount: 1 << 16, alignment: 16)
        }
    }

    deinit {
        abort()
        scratch?.deallocate()
        sample?.deallocate()
        pending.deallocate()
    }

    public func setAttributes(_ attributes: [UInt8]) throws {
        guard attributes.count <= ValueMetadata.maxAttributeBytes else {
            throw StoreError.invalidAttributes("\(attributes.count) bytes, more than \(ValueMetadata.maxAttributeBytes)")
        }
        let previous = metadata.attributes
        if headerLength == 0 {
            // gzip mode before the client's header is in: nothing reserved yet.
            metadata.attributes = attributes
        } else if attributes.count == previous?.count {
            metadata.attributes = attributes
        } else if size == 0 && !flushedAny && pending.count == headerLength {
            // No body yet, only the header placeholder: reserve it again.
            metadata.attributes = attributes
            guard ValueFileHeader.fits(metadata, segments: segments) else {
                metadata.attributes = previous
                throw StoreError.invalidAttributes("they do not fit the value file's header")
            }
            pending.count = 0
            try reserveHeader()
        } else {
            throw StoreError.invalidAttributes("their length changed after the body began")
        }
    }

    /// The size the body will have (its Content-Length), before the first
    /// byte: a large value is then deflated in segments, in parallel.
    public func expect(bytes: Int64) throws {
        guard case .identity = encoding, size == 0, !flushedAny, segments == nil,
              let plan = SegmentTable.planned(forExpectedSize: bytes), ValueFileHeader.fits(metadata, segments: plan) else { return }
        segments = plan
        pending.count = 0  // only the header placeholder is there yet
        try reserveHeader()
    }

    /// Feeds the next piece of the body.
    public func write(_ chunk: UnsafeRawBufferPointer) throws {
        guard !done, chunk.count > 0 else { return }
        switch encoding {
        case .identity:
            guard !joinedEnd else { throw StoreError.corrupt(path: tempPath, reason: "bytes written after the last joined value") }
            // Segments carry their own CRCs, combined at the end.
            if segments == nil { crc = CRC32.update(crc, chunk) }
            size += UInt64(chunk.count)
            if mode != nil {
                try deflateMore(chunk)
            } else if sample == nil && chunk.count >= CompressionMode.sampleBytes {
                // The whole sample in one piece: decide on it without a copy.
                try decide(from: UnsafeRawBufferPointer(rebasing: chunk[0..<CompressionMode.sampleBytes]), wholeValue: false)
                try deflateMore(chunk)
            } else {
                let taken = takeSample(chunk)
                if sample!.count == CompressionMode.sampleBytes { try compressSample(wholeValue: false) }
                if taken < chunk.count { try deflateMore(UnsafeRawBufferPointer(rebasing: chunk[taken...])) }
            }
        case .gzip:
            try verify(chunk)
            if clientHeader != nil {
                clientHeader!.append(contentsOf: chunk)
                guard case .complete(let length) = try GzipMemberHeader.parse(clientHeader!) else {
                    if clientHeader!.count > ValueFileHeader.maxVariableBytes - 2048 {
                        throw StoreError.invalidGzip("the gzip header is larger than 60 KiB")
                    }
                    return
                }
                let all = clientHeader!
                clientHeader = nil
                metadata.originalGzipHeader = Array(all[0..<length])
                guard ValueFileHeader.fits(metadata) else {
                    throw StoreError.invalidGzip("the gzip header is too large to keep (\(length) bytes)")
                }
                try reserveHeader()
                try append(Array(all[length...]))
            } else {
                try append(chunk)
            }
        }
        if pending.count >= Self.flushThreshold { try flush() }
    }

    /// Drops the upload: closes and removes the temp file. Safe to call twice.
    public func abort() {
        releaseCodecs()
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
            // A file opened on demand has no name to remove (the store's spool).
            if !done && openFile == nil { unlink(tempPath) }
        }
        done = true
    }
}
