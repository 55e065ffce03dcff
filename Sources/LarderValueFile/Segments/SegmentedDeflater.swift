import CZlib

/// Deflates a large value in independent segments (see `SegmentTable`),
/// several at once on `SegmentWorkers`, and hands the output back in order.
///
/// Used from one thread at a time (the upload's). At most
/// `SegmentWorkers.depthPerStream` segments are started and not yet
/// emitted, plus the one being filled: a few segments of memory per upload.
///
/// Stored mode (random bytes) makes its segments inline instead
/// (`StoredSegments`): storing is a copy, cheaper than handing a segment to
/// a worker and waiting for it, and it needs no zlib.
final class SegmentedDeflater {
    private let zlib: ZlibPool
    private let mode: CompressionMode
    private let segmentSize: Int
    private let workers: SegmentWorkers
    /// Started and not yet emitted, oldest first.
    private var started: [SegmentJob] = []
    private var spare: [SegmentJob] = []
    private var filling: SegmentJob
    /// Stored mode: the segments written inline, with no job or worker.
    private var stored: StoredSegments?
    /// Compressed bytes of each segment emitted so far.
    private(set) var lengths: [UInt32] = []
    /// CRC-32 of the value so far (of the segments emitted).
    private(set) var crc: UInt32 = 0
    /// Whether `emit` receives small pieces best gathered before writing
    /// (stored mode's block headers), not whole segments.
    var emitsSmallPieces: Bool { stored != nil }

    init(zlib: ZlibPool, mode: CompressionMode, segmentSize: Int, workers: SegmentWorkers = .shared) {
        self.zlib = zlib
        self.mode = mode
        self.segmentSize = segmentSize
        self.workers = workers
        if mode == .stored {
            stored = StoredSegments(segmentSize: segmentSize)
            filling = SegmentJob(inputCapacity: 0, outputCapacity: 0)
        } else {
            filling = Self.makeJob(segmentSize)
        }
    }

    deinit { cancel() }

    private static func makeJob(_ segmentSize: Int) -> SegmentJob {
        // Stored blocks add 5 bytes per 64 KiB; deflate of incompressible
        // data about as much. The output grows if it ever needs more.
        SegmentJob(inputCapacity: segmentSize, outputCapacity: segmentSize + segmentSize / 64 + 1024)
    }

    /// Takes the next bytes of the value; `emit` receives compressed bytes
    /// in file order.
    func write(_ chunk: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        if stored != nil { return try stored!.write(chunk, into: &self.crc, lengths: &lengths, emit: emit) }
        var offset = 0
        while offset < chunk.count {
            // A full segment starts only once more bytes come: the last
            // segment is the one `finish` starts, ending the stream.
            if filling.inputCount == segmentSize { try startFilling(emit: emit) }
            let n = min(segmentSize - filling.inputCount, chunk.count - offset)
            (filling.input.baseAddress! + filling.inputCount).copyMemory(from: chunk.baseAddress! + offset, byteCount: n)
            filling.inputCount += n
            offset += n
        }
    }

    /// Deflates the last segment and emits everything left.
    func finish(emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        if stored != nil { return try stored!.finish(lengths: &lengths, emit: emit) }
        filling.isLast = true
        try startFilling(emit: emit)
        while !started.isEmpty { try emitOldest(emit) }
    }

    /// Waits for started segments without emitting them (an aborted upload).
    func cancel() {
        while !started.isEmpty { workers.finished(started.removeFirst()) }
    }

    private func startFilling(emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        let job = filling
        started.append(job)
        workers.start(job) { [zlib, mode] job in Self.deflate(job, zlib: zlib, mode: mode) }
        filling = spare.popLast() ?? Self.makeJob(segmentSize)
        // Emit what is ready, and wait for the oldest when the stream has
        // as many on workers as it may.
        while let oldest = started.first, started.count > workers.depthPerStream || oldest.isDone {
            try emitOldest(emit)
        }
    }

    private func emitOldest(_ emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        let job = started.removeFirst()
        workers.finished(job)
        if let error = job.error { throw error }
        try emit(UnsafeRawBufferPointer(rebasing: job.output[0..<job.produced]))
        lengths.append(UInt32(job.produced))
        crc = CRC32.combine(crc, job.crc, secondLength: job.inputCount)
        job.reset()
        spare.append(job)
    }

    /// A worker's part: one segment with a fresh stream, ended by a sync
    /// flush (byte-aligned, so the next segment's stream can follow it);
    /// the last one then ends the deflate stream with an empty final block
    /// of its own, which makes the value joinable (`SegmentTable`).
    private static func deflate(_ job: SegmentJob, zlib: ZlibPool, mode: CompressionMode) {
        do {
            let input = UnsafeRawBufferPointer(rebasing: job.input[0..<job.inputCount])
            job.crc = CRC32.update(0, input)
            let deflater = try zlib.deflater(mode)
            defer { zlib.recycle(deflater, mode) }
            var consumed = 0
            while true {
                if job.output.count - job.produced < 1024 { job.growOutput(to: job.output.count * 2) }
                let r = try deflater.step(UnsafeRawBufferPointer(rebasing: input[consumed...]),
                                          UnsafeMutableRawBufferPointer(rebasing: job.output[job.produced...]), flush: Z_SYNC_FLUSH)
                consumed += r.consumed
                job.produced += r.produced
                // Done when all input is in and deflate left output room:
                // nothing more is pending.
                if consumed == input.count && job.produced < job.output.count { break }
            }
            if job.isLast {
                let end = SegmentTable.finalBlock
                if job.output.count - job.produced < end.count { job.growOutput(to: job.output.count + 1024) }
                (job.output.baseAddress! + job.produced).copyMemory(from: end, byteCount: end.count)
                job.produced += end.count
            }
        } catch {
            job.error = error
        }
    }
}
