import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Values": PUT, GET, HEAD, DELETE over real HTTP.
@Suite(.blockingLane) struct StoreValuesTests {
    static func httpDate(_ text: String?) -> Date? {
        guard let text else { return nil }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.date(from: text)
    }

    @Test func putCreatesThenReplacesWithNewETags() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let first = try client.put("k", "one")
        #expect(first.status == 201)
        #expect(first.body.isEmpty)
        let tag1 = try #require(first.header("ETag"))
        #expect(tag1.hasPrefix("\"") && tag1.hasSuffix("\"") && tag1.count > 2, "strong quoted ETag: \(tag1)")
        let second = try client.put("k", "two")
        #expect(second.status == 204)
        let tag2 = try #require(second.header("ETag"))
        #expect(tag2 != tag1)
        // Same bytes again: still a new version, still a new ETag.
        let third = try client.put("k", "two")
        #expect(third.status == 204)
        let tag3 = try #require(third.header("ETag"))
        #expect(tag3 != tag2 && tag3 != tag1)
        let get = try client.get("k")
        #expect(get.status == 200)
        #expect(get.text == "two")
        #expect(get.header("ETag") == tag3)
        // Many writes: every ETag distinct.
        var tags: Set<String> = [tag1, tag2, tag3]
        for i in 0..<50 {
            let put = try client.put("k", "v\(i % 2)")
            #expect(put.status == 204)
            tags.insert(put.header("ETag") ?? "")
        }
        #expect(tags.count == 53)
        // A different key written in between does not get a used tag either.
        #expect(!tags.contains(try client.put("other", "x").header("ETag") ?? ""))
    }

    @Test func getReturnsStoredHeaders() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let before = Date().addingTimeInterval(-2)
        // No Content-Type: the default.
        let put = try client.put("plain", Array("hello".utf8))
        #expect(put.status == 201)
        let get = try client.get("plain")
        #expect(get.status == 200)
        #expect(get.header("Content-Type") == "application/octet-stream")
        #expect(get.header("Content-Length") == "5")
        #expect(get.header("ETag") == put.header("ETag"))
        #expect(get.header("Content-Encoding") == nil)
        let modified = try #require(Self.httpDate(get.header("Last-Modified")), "Last-Modified: \(get.header("Last-Modified") ?? "none")")
        #expect(modified >= before.addingTimeInterval(-1) && modified <= Date().addingTimeInterval(2))
        // A stored Content-Type comes back as sent, parameters included.
        let typed = "text/plain; charset=utf-8"
        #expect(try client.put("typed", Array("héllo".utf8), contentType: typed).status == 201)
        let got = try client.get("typed")
        #expect(got.header("Content-Type") == typed)
        #expect(got.header("Content-Length") == String("héllo".utf8.count))
        #expect(got.text == "héllo")
        // Replacing also replaces the content type.
        #expect(try client.put("typed", Array("{}".utf8), contentType: "application/json").status == 204)
        #expect(try client.get("typed").header("Content-Type") == "application/json")
        #expect(try client.put("typed", Array("raw".utf8)).status == 204)
        #expect(try client.get("typed").header("Content-Type") == "application/octet-stream")
    }

    @Test func chunkedPutIsStored() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection()
        let parts = ["hello ", "", "chunked ", String(repeating: "w", count: 70_000), " world"].filter { !$0.isEmpty }
        var request = "PUT /store/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
        for part in parts { request += String(part.utf8.count, radix: 16) + "\r\n" + part + "\r\n" }
        request += "0\r\n\r\n"
        try connection.send(request)
        let put = try connection.readResponse()
        #expect(put.status == 201)
        let get = try server.client().get("chunked")
        #expect(get.text == parts.joined())
        #expect(get.header("Content-Length") == String(parts.joined().utf8.count))
    }

    @Test func binaryValuesRoundTrip() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        var all = [UInt8](0...255)
        all += [0, 0, 0, 0x1F, 0x8B, 8, 0, 0xFF, 0xFE, 0x0D, 0x0A, 0x0D, 0x0A] // NULs, gzip magic, CRLFCRLF
        all += [UInt8](0...255).reversed()
        #expect(try client.put("bin", all).status == 201)
        let get = try client.get("bin")
        #expect(get.body == all)
        #expect(get.header("Content-Length") == String(all.count))
        // Only NULs.
        let zeros = [UInt8](repeating: 0, count: 100_000)
        #expect(try client.put("zeros", zeros).status == 201)
        #expect(try client.get("zeros").body == zeros)
        // Random bytes (incompressible) just above the server's in-memory threshold.
        let noise = Bytes.random(count: 65 * 1024 + 7, seed: 7)
        #expect(try client.put("noise", noise).status == 201)
        #expect(try client.get("noise").body == noise)
        // Incompressible bytes whose gzip file is bigger than the value.
        let list = try client.list().json?["keys"] as? [[String: Any]] ?? []
        let entry = list.first { $0["key"] as? String == "noise" }
        #expect(entry?["size"] as? Int == noise.count)
        #expect((entry?["storedSize"] as? Int ?? 0) > noise.count)
    }

    @Test(.diskStoreOnly("reads the value file")) func emptyValue() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let put = try client.put("empty", [UInt8]())
        #expect(put.status == 201)
        #expect(put.header("ETag") != nil)
        let get = try client.get("empty")
        #expect(get.status == 200)
        #expect(get.header("Content-Length") == "0")
        #expect(get.body.isEmpty)
        let gz = try client.get("empty", headers: [("Accept-Encoding", "gzip")])
        // Its gzip form is 20 bytes: the empty value goes out as identity.
        #expect(gz.status == 200)
        #expect(gz.header("Content-Encoding") == nil && gz.body.isEmpty && gz.header("Vary") == "Accept-Encoding")
        let head = try client.head("empty")
        #expect(head.status == 200 && head.header("Content-Length") == "0")
        let entry = (try client.list().json?["keys"] as? [[String: Any]])?.first
        #expect(entry?["size"] as? Int == 0)
        // Replacing a value with nothing, and nothing with a value.
        #expect(try client.put("empty", "now full").status == 204)
        #expect(try client.get("empty").text == "now full")
        #expect(try client.put("empty", [UInt8]()).status == 204)
        #expect(try client.get("empty").body.isEmpty)
        // zcat agrees.
        let file = server.dataDirectory + "/values/empty"
        let zcat = try S.run(S.zcatTool, [file])
        #expect(zcat.status == 0 && zcat.output.isEmpty)
    }

    /// 64 MiB, compressible about 2:1: streams in and out, byte for byte.
    @Test func largeValueRoundTrip() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Bytes.random(count: 64 << 20, seed: 0x1234_5678, alphabetBits: 4)
        let crc = Bytes.crc32(value)
        let put = try client.put("big/value", value, contentType: "application/x-big")
        #expect(put.status == 201)
        let get = try client.get("big/value")
        #expect(get.status == 200)
        #expect(get.header("Content-Length") == String(value.count))
        #expect(get.header("Content-Type") == "application/x-big")
        #expect(get.body.count == value.count)
        #expect(Bytes.crc32(get.body) == crc)
        #expect(S.same(get.body, value))
        // Stored compressed, and listed with both sizes.
        let entry = (try client.list("big/").json?["keys"] as? [[String: Any]])?.first
        #expect(entry?["size"] as? Int == value.count)
        let stored = entry?["storedSize"] as? Int ?? 0
        #expect(stored > 0 && stored < value.count * 3 / 4, "storedSize \(stored)")
        // The gzip representation streams too and decodes to the value.
        let gz = try client.get("big/value", headers: [("Accept-Encoding", "gzip")])
        #expect(gz.body.count == stored)
        #expect(gz.header("Content-Length") == String(stored))
        // Its trailer carries the value's CRC-32 and length (inflating 64 MiB again costs seconds).
        let trailer = Array(gz.body.suffix(8))
        let trailerCRC = UInt32(trailer[0]) | UInt32(trailer[1]) << 8 | UInt32(trailer[2]) << 16 | UInt32(trailer[3]) << 24
        let trailerSize = UInt32(trailer[4]) | UInt32(trailer[5]) << 8 | UInt32(trailer[6]) << 16 | UInt32(trailer[7]) << 24
        #expect(trailerCRC == crc)
        #expect(trailerSize == UInt32(truncatingIfNeeded: value.count))
        #expect(Array(gz.body.prefix(2)) == [0x1F, 0x8B])
    }

    @Test func headGivesGetHeadersWithoutBody() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let small = Array("head me".utf8)
        let large = Bytes.random(count: 300_000, seed: 3, alphabetBits: 5)
        #expect(try client.put("small", small, contentType: "text/plain").status == 201)
        #expect(try client.put("large", large).status == 201)
        let connection = try server.connection()
        for key in ["small", "large"] {
            for encoding in [nil, "gzip"] as [String?] {
                let headers = encoding.map { [("Accept-Encoding", $0)] } ?? []
                let get = try connection.request("GET", "/store/\(key)", headers: headers)
                try connection.send("HEAD /store/\(key) HTTP/1.1\r\nHost: x\r\n" + (encoding.map { "Accept-Encoding: \($0)\r\n" } ?? "") + "\r\n")
                let head = try connection.readResponse(bodyExpected: false)
                #expect(head.status == 200)
                for name in ["Content-Type", "ETag", "Last-Modified", "Content-Length", "Content-Encoding", "Vary"] {
                    #expect(head.header(name) == get.header(name), "HEAD \(key) \(encoding ?? "identity"): \(name)")
                }
                #expect(head.header("Content-Length") == String(get.body.count))
                // Had HEAD sent a body, this would read it as a broken status line.
                let after = try connection.request("GET", "/store/small")
                #expect(after.status == 200)
                #expect(after.body == small)
            }
        }
        // HEAD of an absent key: 404, no body, connection still usable.
        try connection.send("HEAD /store/absent HTTP/1.1\r\nHost: x\r\n\r\n")
        let missing = try connection.readResponse(bodyExpected: false)
        #expect(missing.status == 404)
        let after = try connection.request("GET", "/store/small")
        #expect(after.body == small)
    }

    @Test func deleteThenAbsent() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("users/1", "x").status == 201)
        #expect(try client.put("users/2", "y").status == 201)
        let first = try client.delete("users/1")
        #expect(first.status == 204)
        #expect(first.body.isEmpty)
        S.expectError(try client.delete("users/1"), status: 404, code: "not_found")
        S.expectError(try client.get("users/1"), status: 404, code: "not_found")
        #expect(try client.head("users/1").status == 404)
        S.expectError(try client.get("never"), status: 404, code: "not_found")
        S.expectError(try client.delete("never/was"), status: 404, code: "not_found")
        // A "directory" is not a key.
        S.expectError(try client.get("users"), status: 404, code: "not_found")
        S.expectError(try client.delete("users"), status: 404, code: "not_found")
        #expect(try client.get("users/2").text == "y")
        // The file is gone from disk; a re-PUT is a create again.
        #expect(!FileManager.default.fileExists(atPath: server.dataDirectory + "/values/users\\/1"))
        #expect(try client.put("users/1", "back").status == 201)
        #expect(try client.get("users/1").text == "back")
        #expect(try S.listAll(client).keys == ["users/1", "users/2"])
    }

    @Test func healthz() throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try server.client().send("GET", "/healthz")
        #expect(response.status == 200)
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(response.json?["status"] as? String == "ok")
        #expect(response.json?.count == 1)
        // The probe leaves nothing behind in the data directory.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory).filter { $0.hasPrefix(".health") }
        #expect(leftovers.isEmpty)
    }

    /// Before: DELETE read the file's header, failed on the truncated file and
    /// answered 500; the key could be neither read nor removed.
    @Test(.diskStoreOnly("truncates a value file of the disk store")) func deleteOfATruncatedValueFile() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try server.connection(timeout: 10)
        #expect(try connection.request("PUT", "/store/k", body: Array("some value".utf8)).status == 201)
        #expect(try connection.request("PUT", "/store/d/k", body: Array("other value".utf8)).status == 201)
        let path = server.dataDirectory + "/values/k"
        #expect(FileManager.default.fileExists(atPath: path), "no value file at \(path): \(S.valueFiles(server.dataDirectory))")
        #expect(truncate(path, 0) == 0, "truncate: errno \(errno)")

        let delete = try connection.request("DELETE", "/store/k")
        #expect(delete.status == 204, "DELETE of a damaged value: \(delete.status) \(delete.text)")
        #expect(try connection.request("GET", "/store/k").status == 404)
        #expect(!FileManager.default.fileExists(atPath: path), "the damaged file is still there")
        // The server goes on: other keys, the same key again, a fresh connection.
        #expect(try connection.request("GET", "/store/d/k").text == "other value")
        #expect(try connection.request("PUT", "/store/k", body: Array("again".utf8)).status == 201)
        #expect(try server.client().get("k").text == "again")
    }
}
