import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/compression.md, "Large values on every core": a PUT with a Content-Length of
/// 1 MiB or more is deflated in segments on every core, and the value
/// reads back the same every way a client can ask for it — through the
/// real server and real sockets, checked with the system's gzip.
@Suite(.blockingLane) struct SegmentedValueHTTPTests {
    /// The `count` of the `LS` subfield in a value file's gzip extra field
    /// (RFC 1952 2.3.1.1), read with no help from the store's code.
    static func segmentCount(_ file: [UInt8]) -> Int? {
        guard file.count > 12, file[3] & 0x04 != 0 else { return nil }
        let end = 12 + Int(file[10]) + Int(file[11]) << 8
        var p = 12
        while p + 4 <= end {
            let length = Int(file[p + 2]) + Int(file[p + 3]) << 8
            if file[p] == 0x4C && file[p + 1] == 0x53 && length >= 8 {
                return (0..<4).reduce(0) { $0 | Int(file[p + 8 + $1]) << (8 * $1) }
            }
            p += 4 + length
        }
        return nil
    }

    @Test func aLargeValueReadsBackEveryWay() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let json = AdaptiveCompressionTests.json(of: 3 << 20)
        let random = Bytes.random(count: (2 << 20) + 999, seed: 11)
        for (key, value) in [("big/doc.json", json), ("big/blob", random)] {
            #expect(try S.put(client, key: key, value).status == 201)
            let identity = try S.get(client, key: key)
            #expect(identity.status == 200 && S.same(identity.body, value), "\(key): identity GET")
            // The stored bytes as they are: one gzip stream the system's gzip
            // reads whole. Random bytes do not compress: their gzip form does
            // not pay, so they are answered as identity (API.md).
            let gzip = try S.get(client, key: key, headers: [("Accept-Encoding", "gzip")])
            if key == "big/blob" {
                #expect(gzip.status == 200 && gzip.header("Content-Encoding") == nil && S.same(gzip.body, value), "\(key)")
            } else {
                #expect(gzip.status == 200 && gzip.header("Content-Encoding") == "gzip")
                let unzipped = try S.run(S.gzipTool, ["-dc"], stdin: gzip.body)
                #expect(unzipped.status == 0 && S.same(unzipped.output, value), "\(key): gzip -dc of the gzip GET: \(unzipped.error)")
            }
            let file = server.dataDirectory + "/values/" + S.diskPath(key)
            #expect(try S.run(S.gzipTool, ["-t", file]).status == 0)
            let segments = Self.segmentCount(S.readFile(file) ?? [])
            #expect(segments == (value.count + (256 << 10) - 1) / (256 << 10), "\(key): \(segments ?? 0) segments in the file's table")
            // Ranges across segment boundaries (segments are 256 KiB).
            for (start, end) in [(0, 99), (262_140, 262_150), (1 << 20, (1 << 20) + 700_000), (value.count - 10, value.count - 1)] {
                let part = try S.get(client, key: key, headers: [("Range", "bytes=\(start)-\(end)")])
                #expect(part.status == 206 && S.same(part.body, Array(value[start...end])), "\(key): bytes=\(start)-\(end)")
            }
        }
    }
}
