import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/compression.md, "gzip level": each value's mode (deflate, Huffman-only, stored)
/// is chosen from its first 64 KiB. Checked through the real server: the
/// value comes back byte for byte, its file passes the system's `gzip -t`,
/// the file's size shows what the mode did, and `/metrics` counts the mode.
@Suite(.blockingLane) struct AdaptiveCompressionTests {
    static func base64(of count: Int, seed: UInt64) -> [UInt8] {
        Array(Data(Bytes.random(count: count * 3 / 4 + 3, seed: seed)).base64EncodedData().prefix(count))
    }

    /// JSON records with repeated keys and a few varying fields: what a
    /// document store holds.
    static func json(of count: Int) -> [UInt8] { Bytes.jsonRecords(count) }

    /// Puts `value` and checks the round trip, `gzip -t` on its file and
    /// which mode `/metrics` counted; returns the file's size.
    @discardableResult
    static func putAndCheck(_ server: TestServer, key: String, _ value: [UInt8], expect mode: String,
                            sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let before = try MetricsTests.scrape(server.port).scrape
        let client = server.client()
        let put = try S.put(client, key: key, value)
        #expect(put.status == 201, "PUT \(key): \(put.status)", sourceLocation: sourceLocation)
        let get = try client.get(key)
        #expect(get.status == 200 && S.same(get.body, value), "GET \(key): \(get.body.count) bytes, want \(value.count)",
                sourceLocation: sourceLocation)
        let file = server.dataDirectory + "/values/" + S.diskPath(key)
        let test = try S.run(S.gzipTool, ["-t", file])
        #expect(test.status == 0, "gzip -t \(key): \(test.error)", sourceLocation: sourceLocation)
        let after = try MetricsTests.scrape(server.port).scrape
        for m in ["deflate", "huffman", "stored"] {
            let delta = after.value("larder_compression_mode_total", ["mode": m])
                - before.value("larder_compression_mode_total", ["mode": m])
            #expect(delta == (m == mode ? 1 : 0), "\(key): mode \(m) counted \(delta) times, expected \(mode)",
                    sourceLocation: sourceLocation)
        }
        return S.readFile(file)?.count ?? -1
    }

    /// Larder's header (metadata) plus the gzip trailer: well under this.
    static let overhead = 1024

    @Test func randomBytesAreStored() throws {
        let server = try TestServer()
        defer { server.stop() }
        let value = Bytes.random(count: 1 << 20, seed: 21)
        let size = try Self.putAndCheck(server, key: "random", value, expect: "stored")
        // Stored blocks cost 5 bytes per 64 KiB.
        #expect(size >= value.count && size <= value.count + value.count / 65_535 * 5 + Self.overhead, "file \(size)")
    }

    @Test func base64IsHuffmanCoded() throws {
        let server = try TestServer()
        defer { server.stop() }
        let value = Self.base64(of: 1 << 20, seed: 22)
        let size = try Self.putAndCheck(server, key: "base64", value, expect: "huffman")
        // 6 bits of information per byte: about 75 %.
        #expect(Double(size) < 0.78 * Double(value.count) && Double(size) > 0.74 * Double(value.count), "file \(size)")
    }

    @Test func jsonIsDeflated() throws {
        let server = try TestServer()
        defer { server.stop() }
        let value = Self.json(of: 1 << 20)
        let size = try Self.putAndCheck(server, key: "doc.json", value, expect: "deflate")
        #expect(Double(size) < 0.35 * Double(value.count), "file \(size)")
    }

    /// The rule follows the sample: random first 64 KiB, zeros after, is
    /// stored whole. Larger than it could be, but a valid file.
    @Test func theSampleDecidesForTheRest() throws {
        let server = try TestServer()
        defer { server.stop() }
        let value = Bytes.random(count: 64 * 1024, seed: 23) + [UInt8](repeating: 0, count: 1 << 20)
        let size = try Self.putAndCheck(server, key: "mixed", value, expect: "stored")
        #expect(size >= value.count, "file \(size)")
    }

    /// Values too short to sample keep the configured level, whatever they
    /// hold, but those under 3,584 bytes, which the disk store (this suite
    /// reads its files) keeps as one stored block (SmallValueStorageTests).
    @Test func smallValuesKeepTheConfiguredLevel() throws {
        let server = try TestServer()
        defer { server.stop() }
        let small = "stored"
        try Self.putAndCheck(server, key: "empty", [], expect: small)
        try Self.putAndCheck(server, key: "one", [0x7A], expect: small)
        try Self.putAndCheck(server, key: "small-random", Bytes.random(count: 1024, seed: 24), expect: small)
        try Self.putAndCheck(server, key: "just-under", Bytes.random(count: 4 * 1024 - 1, seed: 25), expect: "deflate")
        try Self.putAndCheck(server, key: "just-over", Bytes.random(count: 4 * 1024, seed: 26), expect: "stored")
    }

    @Test func twentyMebibytes() throws {
        let server = try TestServer()
        defer { server.stop() }
        let value = Self.base64(of: 20 << 20, seed: 27)
        let size = try Self.putAndCheck(server, key: "big", value, expect: "huffman")
        #expect(Double(size) < 0.78 * Double(value.count), "file \(size)")
        // zcat reads the whole file back to the value.
        let zcat = try S.run(S.zcatTool, [server.dataDirectory + "/values/big"])
        #expect(zcat.status == 0 && S.same(zcat.output, value))
    }

    /// Sent as gzip: kept as sent, no mode chosen.
    @Test func gzipUploadsAreNotCounted() throws {
        let server = try TestServer()
        defer { server.stop() }
        let before = try MetricsTests.scrape(server.port).scrape
        let value = Bytes.random(count: 200_000, seed: 28)
        let gz = S.gzip(value, level: 6)
        #expect(try server.client().put("gz", gz, headers: StoreGzipTests.gzipHeaders).status == 201)
        #expect(S.readFile(server.dataDirectory + "/values/gz").map { Array($0.suffix(gz.count - 10)) == Array(gz.suffix(gz.count - 10)) } == true)
        let after = try MetricsTests.scrape(server.port).scrape
        for m in ["deflate", "huffman", "stored"] {
            #expect(after.value("larder_compression_mode_total", ["mode": m]) == before.value("larder_compression_mode_total", ["mode": m]))
        }
    }
}
