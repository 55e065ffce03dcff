import Dispatch
import Foundation
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// The result of a finished write.
public struct PutOutcome: Sendable {
    /// true: the key is new (201); false: it replaced a value (204).
    public let created: Bool
    public let metadata: ValueMetadata

    package init(created: Bool, metadata: ValueMetadata) {
        self.created = created
        self.metadata = metadata
    }
}

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
    @exclusivity(unchecked) package private(set) var metadata: ValueMetadata
    private let encoding: Encoding
    @exclusivity(unchecked) package private(set) var tempPath: String
    /// -1 while a value kept in memory has no file yet (`openFile`).
    @exclusivity(unchecked) package private(set) var fd: Int32
    /// Opens the file when the first bytes go out, for a value that starts
    /// in memory; nil when the file was given open.
    private let openFile: (() throws -> (path: String, fd: Int32))?
    /// Bytes not yet written; begins with the header placeholder until the
    /// first flush.
    @exclusivity(unchecked) private var pending = PendingBytes(capacity: 16 * 1024, limit: ValueUpload.flushThreshold + 128 * 1024)
    @exclusivity(unchecked) private var flushedAny = false
    @exclusivity(unchecked) package private(set) var headerLength = 0
    @exclusivity(unchecked) private var size: UInt64 = 0
    /// Bytes written to the temp file so far: at the end, the whole value
    /// file's size (on disk, or in memory: `bytesInMemory`).
    @exclusivity(unchecked) package private(set) var written: Int64 = 0
    @exclusivity(unchecked) private var crc: UInt32 = 0
    @exclusivity(unchecked) private var deflater: Deflater?
    /// identity mode: how the value is compressed, nil until the sample is
    /// in (nothing is deflated before, so the choice covers every byte).
    @exclusivity(unchecked) private var mode: CompressionMode?
    /// identity mode: the value's first bytes while `mode` is undecided.
    /// Starts at 4 KiB so that a small value costs a small allocation.
    @exclusivity(unchecked) private var sample: PendingBytes?
    @exclusivity(unchecked) private var inflater: Inflater?
    /// identity mode, for a large value of known size: where its segments
    /// will lie (room for the table is in the header), and the deflater that
    /// makes them on several cores. nil: one deflate stream, as for any
    /// value of unknown or small size.
    @exclusivity(unchecked) private(set) var segments: SegmentTable?
    @exclusivity(unchecked) private var segmenter: SegmentedDeflater?
    /// identity mode: what `join` appended, before any byte the segmenter
    /// made: the segments' compressed lengths, the bytes' CRC and count.
    @exclusivity(unchecked) private var joinedLengths: [UInt32] = []
    @exclusivity(unchecked) private var joinedCRC: UInt32 = 0
    @exclusivity(unchecked) private var joinedSize: UInt64 = 0
    /// The last value joined kept its final block: the deflate stream ended.
    @exclusivity(unchecked) private var joinedEnd = false
    /// gzip mode: the client's first header, until it is complete.
    @exclusivity(unchecked) private var clientHeader: [UInt8]? = nil
    @exclusivity(unchecked) private var scratch: UnsafeMutableRawBufferPointer?
    @exclusivity(unchecked) private var done = false
    /// Largest value accepted, decompressed.
    private let maxSize: Int64
    /// Checked against the current value at the moment of publishing.
    package let condition: WriteCondition?

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

    private func reserveHeader() throws {
        let header = ValueFileHeader.encode(metadata, segments: segments)
        headerLength = header.count
        try append(header)
    }

    private func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    /// Copies bytes into `pending`, writing it out whenever it fills.
    private func append(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            if pending.room == 0 && !pending.grow() { try flush() }
            let n = min(pending.room, bytes.count - offset)
            pending.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
            offset += n
        }
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

    /// Deflates the next bytes of the value: in segments, or as one stream.
    private func deflateMore(_ input: UnsafeRawBufferPointer) throws {
        if let segmenter {
            try segmenter.write(input, emit: writeThrough)
        } else {
            try compress(input, finish: false)
        }
    }

    /// Writes a segment's output as it is, after what is pending.
    private func writeThrough(_ bytes: UnsafeRawBufferPointer) throws {
        if pending.count > 0 { try flush() }
        try openFileIfNeeded()
        try POSIX.writeAll(fd, bytes, path: tempPath)
        written += Int64(bytes.count)
        flushedAny = true
    }

    /// Runs deflate over `input` straight into `pending`.
    private func compress(_ input: UnsafeRawBufferPointer, finish: Bool) throws {
        var offset = 0
        while true {
            if pending.room < 1024 && !pending.grow() { try flush() }
            let r = try deflater!.step(UnsafeRawBufferPointer(rebasing: input[offset...]), pending.free, finish: finish)
            offset += r.consumed
            pending.count += r.produced
            if finish ? r.ended : (offset == input.count && pending.room > 0) { return }
        }
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

    /// Appends a finished value's segments as they lie on disk (see
    /// `ValueWriter.join`). Possible while every byte so far came by
    /// `join` and ends on a segment boundary, when `value` is joinable and
    /// cut into this upload's segment size (planned by `expect(bytes:)`),
    /// and, unless it is the last, a whole number of segments long. Its
    /// final block is dropped unless it is the last; its CRC is combined
    /// from its trailer, not computed over its bytes.
    public func join(_ value: StoredValue, isLast: Bool) throws -> Bool {
        guard case .identity = encoding, !done, mode == nil, sample == nil, !joinedEnd,
              let table = segments, size % UInt64(table.segmentSize) == 0,
              let source = value.segments, source.joinable, source.segmentSize == table.segmentSize,
              value.metadata.originalGzipHeader == nil,
              isLast || value.metadata.size % UInt64(table.segmentSize) == 0,
              joinedLengths.count + source.lengths.count <= table.reserved else { return false }
        if size + value.metadata.size > UInt64(maxSize) { throw StoreError.tooLarge(limit: maxSize) }
        // The file's tail: the final block, then the gzip trailer (CRC, size).
        let end = SegmentTable.finalBlock
        let deflateBytes = value.fileSize - value.headerLength - 8
        guard deflateBytes >= end.count else { return false }
        var tail = [UInt8](repeating: 0, count: end.count + 8)
        let n = try tail.withUnsafeMutableBytes { try value.read(into: $0, at: value.fileSize - $0.count) }
        let (valueCRC, valueSize) = tail.withUnsafeBytes {
            (UInt32(ValueFileHeader.readLE($0, end.count, 4)), ValueFileHeader.readLE($0, end.count + 4, 4))
        }
        guard n == tail.count, tail.starts(with: end), valueSize == value.metadata.size & 0xFFFF_FFFF else {
            throw StoreError.corrupt(path: value.path, reason: "its end is not what its segment table says")
        }
        let kept = isLast ? deflateBytes : deflateBytes - end.count
        if pending.count > 0 { try flush() }
        try openFileIfNeeded()
        try value.copy(from: value.headerLength, count: kept, to: fd, path: tempPath)
        written += Int64(kept)
        flushedAny = true
        var lengths = source.lengths
        if !isLast { lengths[lengths.count - 1] -= UInt32(end.count) }
        joinedLengths += lengths
        joinedCRC = CRC32.combine(joinedCRC, valueCRC, secondLength: Int(value.metadata.size))
        joinedSize += value.metadata.size
        size += value.metadata.size
        joinedEnd = isLast
        return true
    }

    /// Copies the start of `chunk` into `sample`, up to the sample's size;
    /// returns how many bytes it took.
    private func takeSample(_ chunk: UnsafeRawBufferPointer) -> Int {
        if sample == nil { sample = PendingBytes(capacity: 4 * 1024, limit: CompressionMode.sampleBytes) }
        var taken = 0
        while taken < chunk.count && sample!.count < CompressionMode.sampleBytes {
            if sample!.room == 0 { _ = sample!.grow() }
            let n = min(sample!.room, chunk.count - taken)
            sample!.append(UnsafeRawBufferPointer(rebasing: chunk[taken..<(taken + n)]))
            taken += n
        }
        return taken
    }

    /// Sets `mode` from the sample (a value shorter than
    /// `minimumSampledBytes` keeps the configured level) and the deflater's
    /// parameters to match, before any byte is deflated. A small value that
    /// is already whole gets a small stream (`Deflater.smallValueBytes`).
    private func decide(from bytes: UnsafeRawBufferPointer, wholeValue: Bool) throws {
        let chosen = bytes.count >= CompressionMode.minimumSampledBytes ? CompressionMode.choose(sample: bytes) : .deflate
        if let segments {
            segmenter = SegmentedDeflater(zlib: destination.zlib, mode: chosen, segmentSize: segments.segmentSize)
        } else if wholeValue && bytes.count <= Deflater.smallValueBytes && chosen == .deflate {
            deflater = try destination.zlib.smallDeflater()
        } else {
            deflater = try destination.zlib.deflater(chosen)
        }
        mode = chosen
    }

    /// Decides the mode from the buffered sample, deflates it and lets it
    /// go. `wholeValue`: the value ended within the sample.
    private func compressSample(wholeValue: Bool) throws {
        guard let s = sample else {
            try decide(from: UnsafeRawBufferPointer(start: nil, count: 0), wholeValue: wholeValue)
            return
        }
        try decide(from: s.bytes, wholeValue: wholeValue)
        try deflateMore(s.bytes)
        s.deallocate()
        sample = nil
    }

    /// Inflates gzip input only to check it and count the value's size.
    private func verify(_ chunk: UnsafeRawBufferPointer) throws {
        var produced: UInt64 = 0
        try inflater!.inflate(chunk, scratch: scratch!) { piece in
            produced += UInt64(piece.count)
            // Stop a gzip bomb early instead of inflating it to the end.
            if size + produced > UInt64(maxSize) { throw StoreError.tooLarge(limit: maxSize) }
        }
        size += produced
    }

    /// Makes the file of an upload that began in memory, before its first bytes go out.
    private func openFileIfNeeded() throws {
        guard fd < 0, let openFile else { return }
        (tempPath, fd) = try openFile()
    }

    private func flush() throws {
        try openFileIfNeeded()
        try POSIX.writeAll(fd, pending.bytes, path: tempPath)
        written += Int64(pending.count)
        pending.count = 0
        flushedAny = true
    }

    /// Ends the body and hands the finished file to the store, which makes
    /// it the key's value (atomically with the write condition): the
    /// outcome now, or later without holding the thread while the store
    /// waits (for a flush, a database). The upload is handed over: the
    /// caller must not use it after this call.
    public func finish() -> StoreReply<PutOutcome> {
        destination.finishUpload(self)
    }

    /// For a value created under a generated key by a store that names the
    /// key when the write commits: the prefix (`key` is a placeholder of
    /// the same length until then).
    package var generatedKeyPrefix: String?

    /// The finished file's header as it reads with `version`,
    /// `modifiedNanos` and `key` (a store that assigns versions at commit
    /// writes this in place of the header in the temp file). After
    /// `complete`. A key must have the placeholder's length.
    package func header(version: UInt64, modifiedNanos: Int64, key: String? = nil) -> [UInt8] {
        var meta = metadata
        meta.version = version
        meta.modifiedNanos = modifiedNanos
        if let key {
            precondition(key.utf8.count == meta.key.utf8.count, "a committed key has the placeholder's length")
            meta.key = key
        }
        return ValueFileHeader.encode(meta, segments: segments)
    }

    /// The metadata as committed (see `header(version:modifiedNanos:key:)`).
    package func committed(version: UInt64, modifiedNanos: Int64, key: String? = nil) {
        metadata.version = version
        metadata.modifiedNanos = modifiedNanos
        if let key { metadata.key = key }
    }

    /// `complete`, for a destination about to publish later: on failure
    /// the upload is dropped, and the error is the answer, given now.
    package func completeOrFail() -> StoreReply<PutOutcome>? {
        do {
            try complete()
            return nil
        } catch {
            abort()
            return .now(.failure(error))
        }
    }

    /// Once the store has made the value current: counts it, returns the outcome.
    package func succeeded(created: Bool) -> PutOutcome {
        done = true
        if let mode { destination.compressionModes?.add(mode) }
        return PutOutcome(created: created, metadata: metadata)
    }

    /// Ends the compressed stream and writes the final header: the temp
    /// file holds the whole value.
    package func complete() throws {
        guard !done else { throw StoreError.corrupt(path: tempPath, reason: "upload finished twice") }
        switch encoding {
        case .identity:
            if !joinedLengths.isEmpty && mode == nil && sample == nil {
                // Every byte was joined; the stream ends with the last
                // value's final block, or with one of its own.
                if !joinedEnd {
                    try append(SegmentTable.finalBlock)
                    joinedLengths[joinedLengths.count - 1] += UInt32(SegmentTable.finalBlock.count)
                }
                segments!.lengths = joinedLengths
                crc = joinedCRC
            } else {
                // A value that ended within the sample: decide on what there is.
                if mode == nil { try compressSample(wholeValue: true) }
                if let segmenter {
                    // Its segments follow any joined ones.
                    try segmenter.finish(emit: writeThrough)
                    guard joinedLengths.count + segmenter.lengths.count <= segments!.reserved else {
                        throw StoreError.corrupt(path: tempPath, reason: "the body is longer than its announced size")
                    }
                    segments!.lengths = joinedLengths + segmenter.lengths
                    crc = CRC32.combine(joinedCRC, segmenter.crc, secondLength: Int(size - joinedSize))
                } else {
                    try compress(UnsafeRawBufferPointer(start: nil, count: 0), finish: true)
                }
            }
            var trailer: [UInt8] = []
            ValueFileHeader.appendLE(&trailer, UInt64(crc), bytes: 4)
            ValueFileHeader.appendLE(&trailer, size & 0xFFFF_FFFF, bytes: 4)
            try append(trailer)
        case .gzip:
            if clientHeader != nil || !inflater!.isComplete {
                throw StoreError.invalidGzip(clientHeader?.isEmpty ?? false ? "the body is empty" : "the gzip data ends early")
            }
        }
        metadata.size = size
        metadata.version = try destination.nextVersion()
        metadata.modifiedNanos = Clock.nowNanos()
        let header = ValueFileHeader.encode(metadata, segments: segments)
        precondition(header.count == headerLength, "header length changed")
        if flushedAny {
            try flush()
            try header.withUnsafeBytes { (raw) in try POSIX.writeAll(fd, raw, at: 0, path: tempPath) }
        } else {
            header.withUnsafeBytes { pending.overwrite(at: 0, with: $0) }
            if fd < 0 && openFile != nil {
                // Never outgrew memory: the whole value file stays there.
                written = Int64(pending.count)
            } else {
                try flush()
            }
        }
        // The zlib streams go back to the pool now, not after the flushes.
        releaseCodecs()
    }

    private func releaseCodecs() {
        segmenter?.cancel()
        segmenter = nil
        if let d = deflater, let mode { destination.zlib.recycle(d, mode); deflater = nil }
        if let i = inflater { destination.zlib.recycle(i); inflater = nil }
    }

    /// `count` bytes of the finished value file from `offset`, when it
    /// stayed in memory (no file was opened); nil when it is on file.
    /// After `complete`.
    package func bytesInMemory(at offset: Int, count: Int) -> [UInt8]? {
        guard fd < 0, openFile != nil else { return nil }
        return Array(pending.bytes[offset..<(offset + count)])
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

/// An upload handed from the connection's thread to the continuations that
/// publish it. Unchecked: after `finish` only one continuation at a
/// time touches it (each starts after the previous one handed it on).
package struct HandedUpload: @unchecked Sendable {
    package let value: ValueUpload
    package init(_ value: ValueUpload) { self.value = value }
}

/// Bytes waiting to be written to the temp file. It starts small (most
/// values are) and doubles up to `limit`; a large allocation per write
/// would cost an mmap, page faults and an munmap every time.
struct PendingBytes {
    private var storage: UnsafeMutableRawBufferPointer
    private let limit: Int
    var count = 0

    init(capacity: Int, limit: Int) {
        storage = .allocate(byteCount: capacity, alignment: 16)
        self.limit = limit
    }

    func deallocate() { storage.deallocate() }

    var room: Int { storage.count - count }
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }
    var free: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: storage[count...]) }

    /// Doubles the capacity; false once at the limit (then flush instead).
    mutating func grow() -> Bool {
        guard storage.count < limit else { return false }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: min(storage.count * 2, limit), alignment: 16)
        bigger.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: count)
        storage.deallocate()
        storage = bigger
        return true
    }

    mutating func append(_ data: UnsafeRawBufferPointer) {
        (storage.baseAddress! + count).copyMemory(from: data.baseAddress!, byteCount: data.count)
        count += data.count
    }

    func overwrite(at offset: Int, with data: UnsafeRawBufferPointer) {
        (storage.baseAddress! + offset).copyMemory(from: data.baseAddress!, byteCount: data.count)
    }
}
