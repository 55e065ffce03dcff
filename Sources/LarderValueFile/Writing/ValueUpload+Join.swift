// ValueUpload's join: a finished value's segments appended as they lie on disk, without inflating them.

import Dispatch
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

extension ValueUpload {
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
}
