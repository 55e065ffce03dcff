import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Values", `Range: bytes=a-b` (RFC 9110 section 14): 206 of the
/// representation being sent (identity, or the stored gzip bytes), 416 when
/// out of range, If-Range.
@Suite(.blockingLane) struct RangeTests {
    /// 100 bytes whose neighbours all differ, so a wrong offset shows.
    static let hundred: [UInt8] = (0..<100).map { UInt8(33 + ($0 * 7) % 90) }

    static func range(_ client: WireClient, _ key: String, _ spec: String,
                      _ extra: [(String, String)] = []) throws -> ClientResponse {
        try client.get(key, headers: [("Range", spec)] + extra)
    }

    /// A 206 with exactly `start...end` of `of`, framed and labelled right.
    static func expectPartial(_ response: ClientResponse, _ start: Int, _ end: Int, of whole: [UInt8],
                              sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 206, "status \(response.status): \(response.text.prefix(200))", sourceLocation: sourceLocation)
        #expect(response.header("Content-Range") == "bytes \(start)-\(end)/\(whole.count)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Length") == String(end - start + 1), sourceLocation: sourceLocation)
        #expect(response.header("Accept-Ranges") == "bytes", sourceLocation: sourceLocation)
        #expect(S.same(response.body, Array(whole[start...end])), "wrong bytes for \(start)-\(end)", sourceLocation: sourceLocation)
    }

    static func expectFull(_ response: ClientResponse, _ whole: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 200, "status \(response.status)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Range") == nil, sourceLocation: sourceLocation)
        #expect(response.header("Content-Length") == String(whole.count), sourceLocation: sourceLocation)
        #expect(S.same(response.body, whole), sourceLocation: sourceLocation)
    }

    @Test func satisfiableRanges() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Self.hundred
        let put = try client.put("r", value, contentType: "text/plain")
        #expect(put.status == 201)
        let tag = try #require(put.header("ETag"))
        // A full GET advertises range support.
        let full = try client.get("r")
        Self.expectFull(full, value)
        #expect(full.header("Accept-Ranges") == "bytes")

        let ab = try Self.range(client, "r", "bytes=10-19")
        Self.expectPartial(ab, 10, 19, of: value)
        #expect(ab.header("ETag") == tag)
        #expect(ab.header("Content-Type") == "text/plain")
        Self.expectPartial(try Self.range(client, "r", "bytes=0-0"), 0, 0, of: value)
        Self.expectPartial(try Self.range(client, "r", "bytes=99-99"), 99, 99, of: value)
        // a-: to the end.
        Self.expectPartial(try Self.range(client, "r", "bytes=90-"), 90, 99, of: value)
        Self.expectPartial(try Self.range(client, "r", "bytes=0-"), 0, 99, of: value)
        // -n: the last n bytes.
        Self.expectPartial(try Self.range(client, "r", "bytes=-7"), 93, 99, of: value)
        Self.expectPartial(try Self.range(client, "r", "bytes=-1"), 99, 99, of: value)
        // A suffix longer than the value: all of it.
        Self.expectPartial(try Self.range(client, "r", "bytes=-500"), 0, 99, of: value)
        // An end past the end is clamped.
        Self.expectPartial(try Self.range(client, "r", "bytes=95-500"), 95, 99, of: value)
        Self.expectPartial(try Self.range(client, "r", "bytes=50-99999999999999999999"), 50, 99, of: value)
        // Whitespace and unit case are tolerated.
        Self.expectPartial(try Self.range(client, "r", "Bytes = 3-4"), 3, 4, of: value)
    }

    @Test func unsatisfiableRangeIs416() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Self.hundred
        #expect(try client.put("r", value).status == 201)
        for spec in ["bytes=100-", "bytes=100-200", "bytes=5000-5001", "bytes=-0"] {
            let response = try Self.range(client, "r", spec)
            S.expectError(response, status: 416, code: "range_not_satisfiable")
            #expect(response.header("Content-Range") == "bytes */100", "\(spec)")
        }
        // An empty value has no satisfiable first-last range.
        #expect(try client.put("empty", [UInt8]()).status == 201)
        let empty = try Self.range(client, "empty", "bytes=0-0")
        S.expectError(empty, status: 416, code: "range_not_satisfiable")
        #expect(empty.header("Content-Range") == "bytes */0")
        // A range on an absent key is a plain 404.
        S.expectError(try Self.range(client, "absent", "bytes=0-1"), status: 404, code: "not_found")
    }

    @Test func invalidOrMultipleRangesGetTheFullValue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Self.hundred
        #expect(try client.put("r", value).status == 201)
        for spec in ["bytes=5-2", "bytes=0-1,5-6", "bytes=0-1, -3", "items=0-1", "bytes=a-b", "bytes=", "bytes 0-1", "bytes=--1"] {
            let response = try Self.range(client, "r", spec)
            Self.expectFull(response, value)
            #expect(response.header("Accept-Ranges") == "bytes", "\(spec)")
        }
    }

    @Test func headIgnoresRange() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Self.hundred
        #expect(try client.put("r", value).status == 201)
        let head = try client.head("r", headers: [("Range", "bytes=10-19")])
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "100")
        #expect(head.header("Content-Range") == nil)
        #expect(head.header("Accept-Ranges") == "bytes")
        // An unsatisfiable range on HEAD is ignored too.
        #expect(try client.head("r", headers: [("Range", "bytes=500-")]).status == 200)
        // Range is for GET only: a PUT with Range stores the whole body.
        #expect(try client.put("r", value, headers: [("Range", "bytes=0-1")]).status == 204)
        Self.expectFull(try client.get("r"), value)
    }

    /// With `Accept-Encoding: gzip` the range is over the stored gzip bytes,
    /// labelled with the gzip length and the gzip tag.
    @Test func gzipRangeIsOverTheStoredGzipBytes() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Bytes.random(count: 40_000, seed: 11, alphabetBits: 3)
        #expect(try client.put("z", value, contentType: "text/plain").status == 201)
        let gzipFull = try client.get("z", headers: [("Accept-Encoding", "gzip")])
        #expect(gzipFull.status == 200)
        #expect(gzipFull.header("Content-Encoding") == "gzip")
        let gz = gzipFull.body
        #expect(S.gunzip(gz) == value)
        #expect(gz.count < value.count / 2, "the value compresses: \(gz.count) bytes of gzip")
        let gzTag = try #require(gzipFull.header("ETag"))
        #expect(gzTag.hasSuffix("-gz\""))

        let accept = [("Accept-Encoding", "gzip")]
        let middle = try Self.range(client, "z", "bytes=10-99", accept)
        Self.expectPartial(middle, 10, 99, of: gz)
        #expect(middle.header("Content-Encoding") == "gzip")
        #expect(middle.header("ETag") == gzTag)
        #expect(middle.header("Vary") == "Accept-Encoding")
        Self.expectPartial(try Self.range(client, "z", "bytes=-8", accept), gz.count - 8, gz.count - 1, of: gz)
        Self.expectPartial(try Self.range(client, "z", "bytes=\(gz.count / 2)-", accept), gz.count / 2, gz.count - 1, of: gz)
        // Pieces put together are the gzip file.
        var joined: [UInt8] = []
        var offset = 0
        while offset < gz.count {
            let piece = try Self.range(client, "z", "bytes=\(offset)-\(offset + 4095)", accept)
            #expect(piece.status == 206)
            joined += piece.body
            offset += 4096
        }
        #expect(S.same(joined, gz))
        // Out of range is measured against the gzip length.
        let beyond = try Self.range(client, "z", "bytes=\(gz.count)-", accept)
        S.expectError(beyond, status: 416, code: "range_not_satisfiable")
        #expect(beyond.header("Content-Range") == "bytes */\(gz.count)")
        // The same start is fine for the (longer) identity value.
        let identity = try Self.range(client, "z", "bytes=\(gz.count)-\(gz.count + 9)")
        Self.expectPartial(identity, gz.count, gz.count + 9, of: value)
        #expect(identity.header("Content-Encoding") == nil)
    }

    /// A value larger than the 1 MiB in-memory limit is streamed from disk;
    /// a range in the middle is exactly those bytes, in both encodings.
    @Test func rangeOfALargeStreamedValue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let size = 3 << 20
        let value = Bytes.random(count: size, seed: 2024, alphabetBits: 5)
        #expect(try client.put("big", value).status == 201)
        let start = 1_500_001, end = 1_700_000
        Self.expectPartial(try Self.range(client, "big", "bytes=\(start)-\(end)"), start, end, of: value)
        Self.expectPartial(try Self.range(client, "big", "bytes=-1000"), size - 1000, size - 1, of: value)
        Self.expectPartial(try Self.range(client, "big", "bytes=\(size - 10)-"), size - 10, size - 1, of: value)
        // The gzip representation: compare with the full gzip bytes.
        let gz = try client.get("big", headers: [("Accept-Encoding", "gzip")]).body
        #expect(S.gunzip(gz).map { S.same($0, value) } == true)
        let gzStart = gz.count / 3, gzEnd = gz.count / 3 + 300_000
        Self.expectPartial(try Self.range(client, "big", "bytes=\(gzStart)-\(gzEnd)", [("Accept-Encoding", "gzip")]),
                           gzStart, min(gzEnd, gz.count - 1), of: gz)
    }

    @Test func ifRange() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let old = Self.hundred
        let oldTag = try #require(try client.put("r", old).header("ETag"))
        let value = Array(old.reversed())
        let put = try client.put("r", value)
        #expect(put.status == 204)
        let tag = try #require(put.header("ETag"))
        let lastModified = try #require(try client.get("r").header("Last-Modified"))
        // The current tag: the range applies.
        Self.expectPartial(try Self.range(client, "r", "bytes=0-9", [("If-Range", tag)]), 0, 9, of: value)
        // An old tag: the whole current value instead.
        Self.expectFull(try Self.range(client, "r", "bytes=0-9", [("If-Range", oldTag)]), value)
        // A weak tag is never enough.
        Self.expectFull(try Self.range(client, "r", "bytes=0-9", [("If-Range", "W/" + tag)]), value)
        // Even the exact Last-Modified date sends the whole value: two writes in
        // one second share it, so it cannot prove the range is of the same value.
        Self.expectFull(try Self.range(client, "r", "bytes=0-9", [("If-Range", lastModified)]), value)
        // Another date: full.
        Self.expectFull(try Self.range(client, "r", "bytes=0-9", [("If-Range", "Sat, 01 Jan 2000 00:00:00 GMT")]), value)
        // If-Range also guards an unsatisfiable range: full 200, not 416.
        Self.expectFull(try Self.range(client, "r", "bytes=500-", [("If-Range", oldTag)]), value)
        // If-Range compares against the tag of the representation sent
        // (a compressible value: one whose gzip form is no smaller is sent
        // as identity, with identity's tag).
        let zPut = try client.put("rz", String(repeating: "range ", count: 1000))
        let zTag = try #require(zPut.header("ETag"))
        let gzip = try client.get("rz", headers: [("Accept-Encoding", "gzip")])
        let gzTag = try #require(gzip.header("ETag"))
        #expect(gzTag == String(zTag.dropLast()) + "-gz\"")
        let withGzTag = try Self.range(client, "rz", "bytes=0-9", [("Accept-Encoding", "gzip"), ("If-Range", gzTag)])
        Self.expectPartial(withGzTag, 0, 9, of: gzip.body)
        let withIdentityTag = try Self.range(client, "rz", "bytes=0-9", [("Accept-Encoding", "gzip"), ("If-Range", zTag)])
        #expect(withIdentityTag.status == 200)
        #expect(S.same(withIdentityTag.body, gzip.body))
        // Without Range, If-Range changes nothing.
        Self.expectFull(try client.get("r", headers: [("If-Range", oldTag)]), value)
    }
}
