import Foundation
import LarderWire
import Testing
import LarderTestSupport

private typealias S = StoreTestSupport

/// API.md "Values": a value whose gzip form is no smaller than the value
/// may be answered as identity even when gzip is accepted. REDbot found a
/// 64 KiB random value sent as 65,647 bytes of gzip; it goes as its 65,536.
@Suite(.blockingLane) struct IncompressibleValueTests {
    @Test(arguments: [64 << 10, 64 << 10 + 1, 1 << 20, 3 << 20])
    func randomValueIsAnsweredAsIdentity(size: Int) throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Bytes.random(count: size, seed: UInt64(size))
        let put = try client.put("noise", value, contentType: "application/octet-stream")
        #expect(put.status == 201)
        let etag = try #require(put.header("ETag"))
        let stored = try client.list().json?["keys"] as? [[String: Any]]
        let storedSize = try #require(stored?.first?["storedSize"] as? Int)
        #expect(storedSize >= size, "random bytes do not compress: \(storedSize) for \(size)")

        let got = try client.get("noise", headers: [("Accept-Encoding", "gzip")])
        #expect(got.status == 200)
        #expect(got.header("Content-Encoding") == nil, "gzip would be \(storedSize) bytes for \(size)")
        #expect(got.header("Content-Length") == String(size))
        #expect(got.header("ETag") == etag)
        #expect(got.header("Vary")?.lowercased().contains("accept-encoding") == true)
        #expect(S.same(got.body, value))

        // A range is of the representation sent: the value's bytes.
        let range = try client.get("noise", headers: [("Accept-Encoding", "gzip"), ("Range", "bytes=1000-1999")])
        #expect(range.status == 206)
        #expect(range.header("Content-Encoding") == nil)
        #expect(range.header("Content-Range") == "bytes 1000-1999/\(size)")
        #expect(S.same(range.body, Array(value[1000..<2000])))

        // The identity tag validates it.
        let again = try client.get("noise", headers: [("Accept-Encoding", "gzip"), ("If-None-Match", etag)])
        #expect(again.status == 304)
    }

    @Test func compressibleValueStillGoesAsGzip() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Bytes.random(count: 64 << 10, seed: 5, alphabetBits: 4)
        #expect(try client.put("text", value).status == 201)
        let got = try client.get("text", headers: [("Accept-Encoding", "gzip")])
        #expect(got.header("Content-Encoding") == "gzip")
        #expect(got.body.count < value.count)
        #expect(S.gunzip(got.body).map { S.same($0, value) } == true)
    }
}
