import LarderStoreVocabulary
/// The value of a segmented file (see `SegmentTable`), inflated a few
/// segments ahead on `SegmentWorkers`, so an identity GET of a large value
/// uses every core. A Range request starts at the segment holding its
/// first byte instead of inflating everything before it.
///
/// Used from one thread at a time (the response writer's). Segments are
/// read (pread) and inflated by the job that handles them; `close` waits
/// for started jobs before the file is closed, so no job reads a closed
/// or reused descriptor.
final class SegmentedInflatingStream: ValueByteStream {
    private let value: StoredValue
    private let table: SegmentTable
    /// File offset of each segment, then of the gzip trailer.
    private let offsets: [Int]
    private let workers: SegmentWorkers
    /// The next segment to start.
    private var next = 0
    /// Started and not yet read out, in order.
    private var started: [SegmentJob] = []
    private var spare: [SegmentJob] = []
    /// The segment being read out, and how far.
    private var current: SegmentJob?
    private var readOffset = 0
    /// Bytes to drop from the start of the next segment (a Range start).
    private var dropFromNext = 0
    /// Whether the stream began at byte 0: then the value's CRC is checked at its end.
    private var fromStart = true
    private var crc: UInt32 = 0
    private var ended = false

    init(value: StoredValue, table: SegmentTable, dataStart: Int, workers: SegmentWorkers = .shared) {
        self.value = value
        self.table = table
        self.workers = workers
        var offsets = [dataStart]
        offsets.reserveCapacity(table.lengths.count + 1)
        for length in table.lengths { offsets.append(offsets.last! + Int(length)) }
        self.offsets = offsets
    }

    deinit { close() }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            if let job = current {
                if readOffset < job.produced {
                    let n = min(buffer.count, job.produced - readOffset)
                    buffer.baseAddress!.copyMemory(from: job.output.baseAddress! + readOffset, byteCount: n)
                    readOffset += n
                    return n
                }
                job.reset()
                spare.append(job)
                current = nil
            }
            startMore()
            guard !started.isEmpty else {
                try checkEnd()
                return 0
            }
            let job = started.removeFirst()
            workers.finished(job)
            if let error = job.error { throw error }
            if fromStart { crc = CRC32.combine(crc, job.crc, secondLength: job.produced) }
            current = job
            readOffset = dropFromNext
            dropFromNext = 0
            startMore()
        }
    }

    /// Before the first read, moves straight to the segment holding the
    /// new position; later, reads and drops as any stream does.
    func skip(_ count: Int64) throws {
        guard count > 0 else { return }
        guard current == nil, started.isEmpty, next == 0 else {
            try readAndDrop(count)
            return
        }
        let target = min(UInt64(count), value.metadata.size)
        next = Int(target / UInt64(table.segmentSize))
        dropFromNext = Int(target % UInt64(table.segmentSize))
        fromStart = false
    }

    func close() {
        while !started.isEmpty { workers.finished(started.removeFirst()) }
        current = nil
        spare.removeAll()
        value.close()
    }

    /// Starts segments until this stream has as many on workers as it may.
    private func startMore() {
        while started.count < workers.depthPerStream && next < table.lengths.count {
            let index = next
            next += 1
            let expected = table.uncompressedLength(of: index, valueSize: value.metadata.size)
            let job = spare.popLast() ?? SegmentJob(inputCapacity: Int(table.lengths[index]), outputCapacity: expected + 1)
            job.expectedLength = expected
            job.isLast = index == table.lengths.count - 1
            let range = offsets[index]..<offsets[index + 1]
            // Ahead of the segment being read, only on a free worker slot.
            guard workers.start(job, inlineAllowed: started.isEmpty, { [value] job in Self.inflate(job, from: value, at: range) }) else {
                next -= 1
                spare.append(job)
                return
            }
            started.append(job)
        }
    }

    /// A worker's part: reads the segment's bytes and inflates them whole.
    private static func inflate(_ job: SegmentJob, from value: StoredValue, at range: Range<Int>) {
        do {
            job.growInput(to: range.count)
            job.growOutput(to: job.expectedLength + 1)
            var got = 0
            while got < range.count {
                let n = try value.read(into: UnsafeMutableRawBufferPointer(rebasing: job.input[got..<range.count]),
                                       at: range.lowerBound + got)
                if n == 0 { throw StoreError.corrupt(path: value.path, reason: "the file ends inside a segment") }
                got += n
            }
            job.inputCount = got
            job.produced = try SegmentInflater.inflate(
                UnsafeRawBufferPointer(rebasing: job.input[0..<got]),
                into: UnsafeMutableRawBufferPointer(rebasing: job.output[0..<(job.expectedLength + 1)]),
                expected: job.expectedLength, isLast: job.isLast, path: value.path)
            job.crc = CRC32.update(0, UnsafeRawBufferPointer(rebasing: job.output[0..<job.produced]))
        } catch {
            job.error = error
        }
    }

    /// At the end of a whole-value read: the gzip trailer's CRC and size
    /// must be the value's, as `zcat` would check them.
    private func checkEnd() throws {
        guard !ended else { return }
        ended = true
        guard fromStart else { return }
        var trailer = [UInt8](repeating: 0, count: 8)
        let n = try trailer.withUnsafeMutableBytes { try value.read(into: $0, at: offsets.last!) }
        let (storedCRC, storedSize) = trailer.withUnsafeBytes {
            (UInt32(ValueFileHeader.readLE($0, 0, 4)), ValueFileHeader.readLE($0, 4, 4))
        }
        guard n == 8, storedCRC == crc, storedSize == value.metadata.size & 0xFFFF_FFFF else {
            throw StoreError.corrupt(path: value.path, reason: "the value does not match its gzip trailer")
        }
    }
}
