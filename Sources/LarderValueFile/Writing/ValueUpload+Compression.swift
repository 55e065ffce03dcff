// ValueUpload's codecs: the compression mode chosen from a sample, deflating in segments or as one stream, and gzip input verified.

import Dispatch
import FoundationEssentials
import LarderSupport
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

extension ValueUpload {
    /// Deflates the next bytes of the value: in segments, or as one stream.
    func deflateMore(_ input: UnsafeRawBufferPointer) throws {
        if let segmenter {
            // Stored mode's block headers and bytes are gathered before
            // writing; a deflated segment is written as it is.
            try segmenter.write(input, emit: segmenter.emitsSmallPieces ? append : writeThrough)
        } else {
            try compress(input, finish: false)
        }
    }

    /// Runs deflate over `input` straight into `pending`.
    func compress(_ input: UnsafeRawBufferPointer, finish: Bool) throws {
        if storedWhole { return try appendStoredBlock(input, finish: finish) }
        var offset = 0
        while true {
            if pending.room < 1024 && !pending.grow() { try flush() }
            let r = try deflater!.step(UnsafeRawBufferPointer(rebasing: input[offset...]), pending.free, finish: finish)
            offset += r.consumed
            pending.count += r.produced
            if finish ? r.ended : (offset == input.count && pending.room > 0) { return }
        }
    }

    /// A whole small value as the deflate stream's one final stored block
    /// (RFC 1951 3.2.4: BFINAL 1 and BTYPE 00, then LEN and its complement,
    /// then the bytes): what zlib writes at level 0, without its stream's
    /// set-up. The value's bytes come in one call (it was whole in the
    /// sample); the finishing call writes an empty block for an empty value.
    private func appendStoredBlock(_ input: UnsafeRawBufferPointer, finish: Bool) throws {
        if storedBlockWritten {
            precondition(input.isEmpty, "a stored-block value arrived in pieces")
            return
        }
        let length = UInt16(input.count)
        try append([0x01, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)])
        if !input.isEmpty { try append(input) }
        storedBlockWritten = true
    }

    /// Copies the start of `chunk` into `sample`, up to the sample's size;
    /// returns how many bytes it took.
    func takeSample(_ chunk: UnsafeRawBufferPointer) -> Int {
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
    func decide(from bytes: UnsafeRawBufferPointer, wholeValue: Bool) throws {
        if wholeValue && segments == nil && bytes.count < CompressionMode.storedWholeBelow
            && destination.storesSmallValuesUncompressed {
            storedWhole = true
            mode = .stored
            return
        }
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
    func compressSample(wholeValue: Bool) throws {
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
    func verify(_ chunk: UnsafeRawBufferPointer) throws {
        var produced: UInt64 = 0
        try inflater!.inflate(chunk, scratch: scratch!) { piece in
            produced += UInt64(piece.count)
            // Stop a gzip bomb early instead of inflating it to the end.
            if size + produced > UInt64(maxSize) { throw StoreError.tooLarge(limit: maxSize) }
        }
        size += produced
    }

    func releaseCodecs() {
        segmenter?.cancel()
        segmenter = nil
        if let d = deflater, let mode { destination.zlib.recycle(d, mode); deflater = nil }
        if let i = inflater { destination.zlib.recycle(i); inflater = nil }
    }
}
