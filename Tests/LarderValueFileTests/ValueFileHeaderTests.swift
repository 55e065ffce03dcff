import CZlib
import Foundation
@testable import LarderValueFile
import LarderTestSupport
import Testing
import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

@Suite(.blockingLane) struct ValueFileHeaderUnitTests {
    static func parse(_ bytes: [UInt8]) throws -> ValueFileHeader.Parse {
        try bytes.withUnsafeBytes { try ValueFileHeader.parse($0, path: "test") }
    }

    @Test func roundTrip() throws {
        let metas = [
            ValueMetadata(key: "a/b", contentType: "text/plain", size: 12345, version: 0xDEAD_BEEF_0102,
                          modifiedNanos: 1_700_000_000_123_456_789),
            ValueMetadata(key: "café/ü", contentType: "", size: 0, version: 1, modifiedNanos: 0,
                          expiresNanos: 1_800_000_000_000_000_000, originalGzipHeader: [0x1F, 0x8B, 8, 8, 0, 0, 0, 0, 0, 3, 0x61, 0]),
            ValueMetadata(key: String(repeating: "k", count: 1024), contentType: String(repeating: "t", count: 1024),
                          size: .max, version: .max, modifiedNanos: -1),
            // Attributes (the S3 face's), in their own `LA` subfield.
            ValueMetadata(key: "b/obj", contentType: "binary/octet-stream", size: 3, version: 2, modifiedNanos: 5,
                          attributes: [1] + Array(repeating: 0xAB, count: 40)),
            ValueMetadata(key: "b/empty", contentType: "", size: 0, version: 3, modifiedNanos: 5, attributes: []),
        ]
        for meta in metas {
            let header = ValueFileHeader.encode(meta)
            #expect(header.count == ValueFileHeader.length(of: meta))
            #expect(Array(header.prefix(4)) == [0x1F, 0x8B, 0x08, 0x04], "gzip magic, deflate, FEXTRA only")
            let xlen = Int(header[10]) | Int(header[11]) << 8
            #expect(xlen == header.count - 12)
            #expect(header[12] == UInt8(ascii: "L") && header[13] == UInt8(ascii: "R"))
            guard case .complete(let parsed, let length) = try Self.parse(header) else {
                Issue.record("not complete"); continue
            }
            #expect(parsed == meta)
            #expect(length == header.count)
            // Where the PostgreSQL store writes the version in as it commits.
            let versionBytes = header[ValueFileHeader.versionOffset..<ValueFileHeader.versionOffset + 8]
            #expect(versionBytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) } == meta.version)
            // Any prefix asks for more, never misparses.
            for cut in [0, 5, 11, 12, header.count - 1] {
                guard case .needMore(let n) = try Self.parse(Array(header.prefix(cut))) else {
                    Issue.record("prefix of \(cut) bytes parsed"); continue
                }
                #expect(n > cut)
            }
        }
    }

    /// The attributes ride in a subfield after the metadata's; one with a
    /// segment table after them reads back whole, and a file written
    /// before attributes existed reads with none.
    @Test func attributesBesideASegmentTable() throws {
        let attributes = Array((0..<300).map { UInt8(truncatingIfNeeded: $0) })
        let meta = ValueMetadata(key: "big/one", contentType: "x/y", size: 4 << 20, version: 9, modifiedNanos: 1,
                                 attributes: attributes)
        var table = try #require(SegmentTable.planned(forExpectedSize: 4 << 20))
        table.lengths = Array(repeating: 1000, count: table.reserved)
        let header = ValueFileHeader.encode(meta, segments: table)
        #expect(header.count == ValueFileHeader.length(of: meta, segments: table))
        guard case .complete(let parsed, _) = try Self.parse(header) else { Issue.record("not complete"); return }
        #expect(parsed.attributes == attributes)
        let segments = header.withUnsafeBytes { ValueFileHeader.segmentTable($0, headerLength: header.count) }
        #expect(segments?.reserved == table.reserved && segments?.lengths == table.lengths)
        var plain = meta
        plain.attributes = nil
        guard case .complete(let old, _) = try Self.parse(ValueFileHeader.encode(plain)) else { Issue.record("not complete"); return }
        #expect(old.attributes == nil)
    }

    @Test func headerPlusDeflateIsAGzipFile() throws {
        // Our header followed by a zlib-made member's body and trailer is a valid gzip file.
        let value = Array("hello header".utf8)
        let member = StoreTestSupport.gzip(value)
        let meta = ValueMetadata(key: "k", contentType: "text/plain", size: UInt64(value.count), version: 7, modifiedNanos: 1)
        let file = ValueFileHeader.encode(meta) + member[10...]
        #expect(StoreTestSupport.gunzip(file) == value)
    }

    @Test func corruptHeaders() throws {
        let meta = ValueMetadata(key: "k", contentType: "t", size: 1, version: 1, modifiedNanos: 1)
        let good = ValueFileHeader.encode(meta)
        var notGzip = good; notGzip[0] = 0x1E
        var noExtra = good; noExtra[3] = 0
        var otherID = good; otherID[12] = UInt8(ascii: "X")
        var badFormat = good; badFormat[16] = 9
        var extraFlags = good; extraFlags[3] |= 0x08
        for (name, bytes) in [("not gzip", notGzip), ("no FEXTRA", noExtra), ("other subfield", otherID),
                              ("format", badFormat), ("FNAME", extraFlags)] {
            #expect(throws: StoreError.self, "\(name)") { _ = try Self.parse(bytes) }
        }
    }
}
