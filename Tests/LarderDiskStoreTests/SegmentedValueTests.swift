import CZlib
import Foundation
@testable import LarderDiskStore
@testable import LarderStorage
@testable import LarderValueFile
import LarderTestSupport
import Testing
import LarderStoreVocabulary

/// Large values of known size are deflated in independent segments on
/// several cores (`SegmentTable`): the file stays one gzip stream, reads
/// inflate segments in parallel, a range starts at its segment, and damage
/// is an error, never data.
@Suite(.blockingLane) struct SegmentedValueTests {
    /// Text with repeats (deflate), then random bytes (stored) and base64 (Huffman).
    static func mixed(_ count: Int, seed: UInt64) -> [UInt8] {
        var g = SeededGenerator(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(count)
        var i = 0
        while out.count < count {
            out += Array("{\"id\":\(i),\"name\":\"user\(i % 977)\",\"score\":\(UInt32.random(in: 0...99_999, using: &g))},\n".utf8)
            i += 1
        }
        return Array(out.prefix(count))
    }

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    static func file(_ t: TempStore, _ key: String) throws -> [UInt8] {
        try #require(FileManager.default.contents(atPath: t.values + "/" + key).map(Array.init))
    }

    static func table(of file: [UInt8]) throws -> (SegmentTable?, headerLength: Int) {
        try file.withUnsafeBytes { raw in
            guard case .complete(_, let length) = try ValueFileHeader.parse(raw, path: "f") else { return (nil, 0) }
            return (ValueFileHeader.segmentTable(raw, headerLength: length), length)
        }
    }

    /// The bytes from `offset`, `count` of them, read as a Range request does.
    static func range(_ t: TempStore, _ key: String, from offset: Int, count: Int) throws -> [UInt8] {
        let stream = try t.store.open(try StoreKey(key)).get().identityStream()
        defer { stream.close() }
        try stream.skip(Int64(offset))
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 70_000)
        while out.count < count {
            let n = try buffer.withUnsafeMutableBytes { try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<min($0.count, count - out.count)])) }
            if n == 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    @Test(arguments: ["mixed", "random", "base64"])
    func segmentedValueIsOneGzipStreamAndReadsBack(kind: String) throws {
        let t = try TempStore()
        let size = 4 * SegmentTable.baseSegmentSize + 12_345
        let value: [UInt8] = switch kind {
        case "mixed": Self.mixed(size, seed: 1)
        case "random": Self.random(size, seed: 2)
        default: Array(Data(Self.random(size, seed: 3)).base64EncodedData().prefix(size))
        }
        try t.put("big", value, pieces: 17, expected: Int64(size))
        let file = try Self.file(t, "big")
        let (table, headerLength) = try Self.table(of: file)
        let segments = try #require(table, "a value of announced size \(size) has a segment table")
        #expect(segments.lengths.count == 5)
        // Header, the segments back to back, the 8-byte trailer: one gzip
        // member, which zlib (as zcat, curl and browsers do) reads whole.
        #expect(headerLength + segments.lengths.reduce(0, { $0 + Int($1) }) + 8 == file.count)
        #expect(StoreTestSupport.gunzip(file) == value)
        let opened = try t.store.open(try StoreKey("big")).get()
        let stream = try opened.identityStream()
        #expect(stream is SegmentedInflatingStream)
        #expect(try t.drain(stream) == value)
        #expect(try t.readGzip("big") == file)
    }

    /// Random bytes are stored inline (`StoredSegments`), not deflated on
    /// workers: stored blocks cost a few bytes per 64 KiB, every segment
    /// still reads alone and by range, and a value of whole segments is
    /// still joinable. Sizes on and around segment and block boundaries,
    /// in pieces that split blocks.
    @Test(arguments: [4 * SegmentTable.baseSegmentSize, 4 * SegmentTable.baseSegmentSize + 1,
                      SegmentTable.baseSegmentSize * 5 + 65_535, (1 << 20) + 3 * 65_535])
    func randomBytesAreStoredBlocksInTheirSegments(size: Int) throws {
        let t = try TempStore()
        let value = Self.random(size, seed: UInt64(size))
        try t.put("raw", value, pieces: 7, expected: Int64(size))
        let file = try Self.file(t, "raw")
        let (table, headerLength) = try Self.table(of: file)
        let segments = try #require(table)
        let s = SegmentTable.baseSegmentSize
        #expect(segments.lengths.count == (size + s - 1) / s)
        #expect(headerLength + segments.lengths.reduce(0, { $0 + Int($1) }) + 8 == file.count)
        // Stored: the value's bytes plus block headers, nothing deflated.
        let overhead = file.count - headerLength - 8 - size
        #expect(overhead > 0 && overhead < size / 1000 + 64, "overhead \(overhead) bytes")
        #expect(StoreTestSupport.gunzip(file) == value)
        let stream = try t.store.open(try StoreKey("raw")).get().identityStream()
        #expect(stream is SegmentedInflatingStream)
        #expect(try t.drain(stream) == value)
        for offset in [0, s - 1, s, 2 * s + 65_534, size - 3] {
            #expect(try Self.range(t, "raw", from: offset, count: 7) == Array(value[offset..<min(size, offset + 7)]))
        }
        #expect(try t.read("raw") == value)
    }

    @Test func rangesStartAtTheirSegment() throws {
        let t = try TempStore()
        let s = SegmentTable.baseSegmentSize
        let value = Self.mixed(5 * s + 777, seed: 4)
        try t.put("r", value, pieces: 3, expected: Int64(value.count))
        for (offset, count) in [(0, 10), (1, 100), (s - 1, 2), (s, 5), (s + 1, 3 * s), (4 * s + 700, 77), (value.count - 1, 1),
                                (2 * s - 3, s + 10), (value.count, 5)] {
            let want = Array(value[min(offset, value.count)..<min(value.count, offset + count)])
            #expect(try Self.range(t, "r", from: offset, count: count) == want, "range \(offset)+\(count)")
        }
    }

    @Test func smallOrUnannouncedValuesStayOneStream() throws {
        let t = try TempStore()
        let value = Self.mixed(3 * SegmentTable.baseSegmentSize, seed: 5)
        try t.put("unknown-size", value, pieces: 5)
        try t.put("small", Array(value.prefix(100_000)), expected: 100_000)
        for key in ["unknown-size", "small"] {
            #expect(try Self.table(of: try Self.file(t, key)).0 == nil, "\(key) has no segment table")
        }
        #expect(try t.read("unknown-size") == value)
    }

    @Test func aShorterBodyThanAnnouncedStillReads() throws {
        let t = try TempStore()
        let value = Self.mixed(2 * SegmentTable.baseSegmentSize + 5, seed: 6)
        try t.put("short", value, expected: Int64(8 * SegmentTable.baseSegmentSize))
        let (table, _) = try Self.table(of: try Self.file(t, "short"))
        #expect(table?.lengths.count == 3 && table?.reserved == 8)
        #expect(try t.read("short") == value)
        #expect(try Self.range(t, "short", from: SegmentTable.baseSegmentSize * 2, count: 10) == Array(value.suffix(5)))
        #expect(try Self.table(of: try Self.file(t, "short")).0 != nil)
    }

    @Test func aLongerBodyThanAnnouncedIsRefused() throws {
        let t = try TempStore()
        let value = Self.mixed(5 * SegmentTable.baseSegmentSize, seed: 7)
        #expect(throws: StoreError.self) { try t.put("long", value, expected: Int64(SegmentTable.minimumValueSize)) }
        #expect(throws: StoreError.notFound) { _ = try t.store.open(try StoreKey("long")).get() }
    }

    /// Stores `value` with its size announced, so it is segmented; returns
    /// its file, the file's segment table and the header's length.
    static func putSegmented(_ t: TempStore, _ key: String, _ value: [UInt8]) throws
        -> (file: [UInt8], table: SegmentTable, headerLength: Int) {
        try t.put(key, value, expected: Int64(value.count))
        let file = try Self.file(t, key)
        let (table, headerLength) = try Self.table(of: file)
        return (file, try #require(table, "\(key) has a segment table"), headerLength)
    }

    @Test func aDamagedSegmentIsAnErrorNotData() throws {
        let t = try TempStore()
        let value = Self.mixed(4 * SegmentTable.baseSegmentSize, seed: 8)
        var (file, segments, headerLength) = try Self.putSegmented(t, "d", value)
        // A byte in the middle of the third segment.
        let at = headerLength + Int(segments.lengths[0]) + Int(segments.lengths[1]) + Int(segments.lengths[2]) / 2
        file[at] ^= 0x55
        try Data(file).write(to: URL(fileURLWithPath: t.values + "/d"))
        #expect(throws: StoreError.self) { _ = try t.read("d") }
        // A range inside an undamaged segment still reads.
        #expect(try Self.range(t, "d", from: 10, count: 1000) == Array(value[10..<1010]))
    }

    @Test func aTableThatDisagreesWithTheFileIsIgnored() throws {
        let t = try TempStore()
        let value = Self.mixed(5 * SegmentTable.baseSegmentSize, seed: 9)
        var (file, table, headerLength) = try Self.putSegmented(t, "x", value)
        // The table's entries end the header.
        let firstEntry = headerLength - 4 * table.reserved
        file[firstEntry] &+= 1
        try Data(file).write(to: URL(fileURLWithPath: t.values + "/x"))
        let stream = try t.store.open(try StoreKey("x")).get().identityStream()
        #expect(!(stream is SegmentedInflatingStream), "a table whose lengths do not add up is not trusted")
        #expect(try t.drain(stream) == value)
    }

    /// A slot is held from `start` until `finished`; without one, a job
    /// runs inline, or (a reader's prefetch) not at all.
    @Test func slotsBoundTheJobsOnWorkers() {
        let workers = SegmentWorkers(slots: 1)
        let a = SegmentJob(inputCapacity: 16, outputCapacity: 16), b = SegmentJob(inputCapacity: 16, outputCapacity: 16)
        #expect(workers.start(a) { $0.produced = 1 })
        #expect(!workers.start(b, inlineAllowed: false) { $0.produced = 2 }, "no free slot: a prefetch is not started")
        #expect(workers.start(b) { $0.produced = 3 }, "no free slot: run here")
        #expect(b.isDone && b.produced == 3 && !b.holdsSlot)
        workers.finished(a)
        #expect(a.produced == 1 && !a.holdsSlot)
        let c = SegmentJob(inputCapacity: 16, outputCapacity: 16)
        #expect(workers.start(c, inlineAllowed: false) { $0.produced = 4 }, "the slot is free again")
        workers.finished(c)
        #expect(c.produced == 4)
    }

    /// With no free worker slot a stream does its segments itself: the
    /// output is the same deflate stream.
    @Test func withoutFreeSlotsSegmentsAreDeflatedInline() throws {
        let value = Self.mixed(200_000, seed: 10)
        for slots in [1, 8] {
            let workers = SegmentWorkers(slots: slots)
            let zlib = ZlibPool(level: 1)
            var out: [UInt8] = []
            let deflater = SegmentedDeflater(zlib: zlib, mode: .deflate, segmentSize: 16_384, workers: workers)
            for start in stride(from: 0, to: value.count, by: 10_000) {
                try value[start..<min(value.count, start + 10_000)].withUnsafeBytes { chunk in
                    try deflater.write(chunk) { out += $0 }
                }
            }
            try deflater.finish { out += $0 }
            #expect(deflater.lengths.count == (value.count + 16_383) / 16_384)
            #expect(deflater.crc == value.withUnsafeBytes { CRC32.update(0, $0) })
            var inflated = [UInt8](repeating: 0, count: value.count + 1)
            let n = try out.withUnsafeBytes { input in
                try inflated.withUnsafeMutableBytes { output in
                    try SegmentInflater.inflate(input, into: output, expected: value.count, isLast: true, path: "inline")
                }
            }
            #expect(n == value.count && Array(inflated.prefix(n)) == value, "slots: \(slots)")
        }
    }
}
