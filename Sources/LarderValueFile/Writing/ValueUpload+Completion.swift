// ValueUpload's end: the value file completed and handed to the store that publishes it.

import Dispatch
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

extension ValueUpload {
    /// Ends the body and hands the finished file to the store, which makes
    /// it the key's value (atomically with the write condition): the
    /// outcome now, or later without holding the thread while the store
    /// waits (for a flush, a database). The upload is handed over: the
    /// caller must not use it after this call.
    public func finish() -> StoreReply<PutOutcome> {
        destination.finishUpload(self)
    }

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
                    try segmenter.finish(emit: segmenter.emitsSmallPieces ? append : writeThrough)
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
        metadata.modifiedNanos = destination.modifiedNanos()
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

    /// `count` bytes of the finished value file from `offset`, when it
    /// stayed in memory (no file was opened); nil when it is on file.
    /// After `complete`.
    package func bytesInMemory(at offset: Int, count: Int) -> [UInt8]? {
        guard fd < 0, openFile != nil else { return nil }
        return Array(pending.bytes[offset..<(offset + count)])
    }
}
