import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/compression.md: on the disk store a value that arrives whole and is
/// shorter than 3,584 bytes is kept as one stored deflate block, with no
/// zlib stream: its file takes one 4 KiB block whatever its bytes, and
/// deflating it was a third of a small PUT's instructions. The file is
/// still a standard gzip file; a client that accepts gzip gets identity,
/// as for any value whose gzip form is no smaller (API.md).
@Suite(.blockingLane) struct SmallValueStorageTests {
    static let storedWholeBelow = 4096 - 512

    /// The raw deflate stream of a value file: after gzip's 10 bytes and the
    /// extra field (Larder's metadata), up to the 8-byte trailer.
    static func deflateStream(_ file: [UInt8]) throws -> ArraySlice<UInt8> {
        try #require(file.count >= 18 && file[0] == 0x1F && file[1] == 0x8B)
        try #require(file[3] == 0x04, "only FEXTRA is set")
        let extra = Int(file[10]) | Int(file[11]) << 8
        return file[(12 + extra)..<(file.count - 8)]
    }

    @Test(.diskStoreOnly("reads the value file"))
    func aSmallValueIsOneStoredBlockAndStillAGzipFile() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let json = Array(String(repeating: #"{"name":"Ada","langs":["swift","c"]},"#, count: 27).utf8)  // 1,026 bytes
        for (key, value) in [("json", json), ("empty", []), ("edge", Array(repeating: UInt8(ascii: "a"), count: Self.storedWholeBelow - 1))] {
            #expect(try client.put(key, value, contentType: "application/json").status == 201)
            let file = try #require(S.readFile(server.dataDirectory + "/values/" + key))
            let stream = try Self.deflateStream(file)
            // BFINAL 1, BTYPE 00 (stored), then LEN and NLEN, then the bytes as they are.
            let length = value.count
            #expect(Array(stream.prefix(5)) == [0x01, UInt8(length & 0xFF), UInt8(length >> 8),
                                                UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)], "\(key)")
            #expect(Array(stream.dropFirst(5)) == value, "\(key)")
            let zcat = try S.run(S.zcatTool, [], stdin: file)
            #expect(zcat.status == 0 && S.same(zcat.output, value), "\(key): \(zcat.error)")
            // Accepting gzip gets identity: the gzip form would be no smaller.
            let get = try client.get(key, headers: [("Accept-Encoding", "gzip")])
            #expect(get.status == 200 && S.same(get.body, value), "\(key)")
            #expect(get.header("Content-Encoding") == nil)
            #expect(get.header("Vary")?.lowercased().contains("accept-encoding") == true)
        }
        // At the threshold, a compressible value is deflated as before.
        let large = Array(repeating: UInt8(ascii: "a"), count: Self.storedWholeBelow)
        #expect(try client.put("large", large).status == 201)
        let file = try #require(S.readFile(server.dataDirectory + "/values/large"))
        #expect(file.count < 512, "deflated: \(file.count) bytes")
        let gzip = try client.get("large", headers: [("Accept-Encoding", "gzip")])
        #expect(gzip.header("Content-Encoding") == "gzip")
        // /metrics counts the three small ones as stored, the large one as deflated.
        let metrics = try client.send("GET", "/metrics").text
        #expect(metrics.contains(#"larder_compression_mode_total{mode="stored"} 3"#), "\(metrics)")
        #expect(metrics.contains(#"larder_compression_mode_total{mode="deflate"} 1"#))
    }
}
