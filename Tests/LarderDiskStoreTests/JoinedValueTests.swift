import Foundation
@testable import LarderDiskStore
@testable import LarderValueFile
import LarderTestSupport
import Testing
import LarderStoreVocabulary

/// Values cut into segments of one size are joined into one value without
/// inflating or deflating a byte (`ValueUpload.join`), as a multipart
/// upload's parts become its object: the result is one gzip stream that
/// zlib reads whole, whose segments read in parallel and by range, and
/// whose CRC is right.
@Suite(.blockingLane) struct JoinedValueTests {
    static let segment = SegmentTable.baseSegmentSize

    /// Writes `key` from `parts`, each joined (or written, when `join`
    /// declines), with the total size announced as CompleteMultipartUpload
    /// does. Returns how many parts were joined.
    @discardableResult
    static func join(_ t: TempStore, _ key: String, _ parts: [String]) throws -> Int {
        let opened = try parts.map { try t.store.open(try StoreKey($0)).get() }
        defer { opened.forEach { $0.close() } }
        let upload = try t.store.beginUpload(key: try StoreKey(key), contentType: "application/octet-stream", encoding: .identity)
        try upload.expect(bytes: Int64(opened.reduce(0) { $0 + Int($1.metadata.size) }))
        var joined = 0
        for (index, part) in opened.enumerated() {
            if try upload.join(part, isLast: index == opened.count - 1) {
                joined += 1
            } else {
                let bytes = try part.readAll()
                try bytes.withUnsafeBytes { try upload.write($0) }
            }
        }
        _ = try upload.finish().get()
        return joined
    }

    /// Stores each value with its size announced, so it is cut into segments.
    static func putAnnounced(_ t: TempStore, _ values: [(String, [UInt8])], pieces: Int = 1) throws {
        for (key, value) in values { try t.put(key, value, pieces: pieces, expected: Int64(value.count)) }
    }

    /// Every way of reading `key` gives `value`.
    static func expectReadsBack(_ t: TempStore, _ key: String, _ value: [UInt8], table count: Int? = nil) throws {
        let file = try SegmentedValueTests.file(t, key)
        #expect(StoreTestSupport.gunzip(file) == value, "zlib reads the joined file as one gzip stream")
        let (table, headerLength) = try SegmentedValueTests.table(of: file)
        let segments = try #require(table)
        #expect(segments.joinable)
        if let count { #expect(segments.lengths.count == count) }
        #expect(headerLength + segments.lengths.reduce(0, { $0 + Int($1) }) + 8 == file.count)
        let stream = try t.store.open(try StoreKey(key)).get().identityStream()
        #expect(stream is SegmentedInflatingStream, "the table is trusted")
        #expect(try t.drain(stream) == value)
        for offset in [0, segment - 3, 3 * segment + 17, value.count - 5] {
            #expect(try SegmentedValueTests.range(t, key, from: offset, count: 9) == Array(value[offset..<min(value.count, offset + 9)]))
        }
        // The trailer's CRC is the value's: a read that checks it passes.
        #expect(try t.read(key) == value)
    }

    @Test func wholeSegmentPartsAndAnyLastPartJoinWithoutRecompressing() throws {
        let t = try TempStore()
        let a = SegmentedValueTests.mixed(4 * Self.segment, seed: 21)
        let b = SegmentedValueTests.random(4 * Self.segment, seed: 22)
        let c = SegmentedValueTests.mixed(5 * Self.segment + 777, seed: 23)
        try Self.putAnnounced(t, [("a", a), ("b", b), ("c", c)], pieces: 7)
        let joined = try Self.join(t, "abc", ["a", "b", "c"])
        #expect(joined == 3, "every part was copied as it lies")
        try Self.expectReadsBack(t, "abc", a + b + c, table: 14)
    }

    @Test func aLastPartTooSmallToBeSegmentedIsDeflatedAfterTheJoinedOnes() throws {
        let t = try TempStore()
        let a = SegmentedValueTests.mixed(4 * Self.segment, seed: 24)
        let small = SegmentedValueTests.mixed(100_000, seed: 25)
        try Self.putAnnounced(t, [("a", a), ("small", small)])
        #expect(try Self.join(t, "joined", ["a", "small"]) == 1)
        try Self.expectReadsBack(t, "joined", a + small, table: 5)
    }

    @Test func aPartThatIsNotWholeSegmentsEndsTheJoiningAndTheRestIsDeflated() throws {
        let t = try TempStore()
        let a = SegmentedValueTests.mixed(4 * Self.segment, seed: 26)
        let odd = SegmentedValueTests.mixed(4 * Self.segment + 1, seed: 27)
        let c = SegmentedValueTests.mixed(4 * Self.segment, seed: 28)
        try Self.putAnnounced(t, [("a", a), ("odd", odd), ("c", c)])
        #expect(try Self.join(t, "joined", ["a", "odd", "c"]) == 1, "only the first part: after it, bytes are not on a segment boundary")
        try Self.expectReadsBack(t, "joined", a + odd + c)
    }

    @Test func joinedPartsWithNothingAfterThemGetAnEndOfTheirOwn() throws {
        let t = try TempStore()
        let a = SegmentedValueTests.mixed(4 * Self.segment, seed: 29)
        try t.put("a", a, expected: Int64(a.count))
        let part = try t.store.open(try StoreKey("a")).get()
        defer { part.close() }
        let upload = try t.store.beginUpload(key: try StoreKey("copy"), contentType: "application/octet-stream", encoding: .identity)
        try upload.expect(bytes: Int64(a.count))
        #expect(try upload.join(part, isLast: false))
        _ = try upload.finish().get()
        try Self.expectReadsBack(t, "copy", a, table: 4)
    }

    /// A file written before values were joinable (its table without the
    /// bit) is streamed, never cut at a guessed end.
    @Test func aValueWithoutTheJoinableMarkIsNotJoined() throws {
        let t = try TempStore()
        let a = SegmentedValueTests.mixed(4 * Self.segment, seed: 30)
        var (file, table, headerLength) = try SegmentedValueTests.putSegmented(t, "old", a)
        // The table's segment size field, just before its count and entries.
        let sizeField = headerLength - 4 * table.reserved - 8
        #expect(file[sizeField + 3] & 0x80 != 0)
        file[sizeField + 3] &= 0x7F
        try Data(file).write(to: URL(fileURLWithPath: t.values + "/old"))
        try t.put("b", a, expected: Int64(a.count))
        #expect(try Self.join(t, "joined", ["old", "b"]) == 0)
        try Self.expectReadsBack(t, "joined", a + a, table: 8)
    }

    @Test func aValueOfAnotherSegmentSizeOrUnsegmentedIsNotJoined() throws {
        let t = try TempStore()
        let a = SegmentedValueTests.mixed(4 * Self.segment, seed: 31)
        try t.put("unannounced", a)  // no size known: one stream, no table
        try t.put("b", a, expected: Int64(a.count))
        #expect(try Self.join(t, "joined", ["unannounced", "b"]) == 0)
        try Self.expectReadsBack(t, "joined", a + a, table: 8)
    }
}
