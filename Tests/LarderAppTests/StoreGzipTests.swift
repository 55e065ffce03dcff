import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Values" (gzip rows) and "Durability" (every value file is a
/// standard gzip file), checked with zlib and the system gzip tools.
@Suite(.blockingLane) struct StoreGzipTests {
    static let gzipHeaders = [("Content-Encoding", "gzip")]
    static let acceptGzip = [("Accept-Encoding", "gzip")]

    /// Stores `gz` as gzip and checks both representations.
    static func expectStoredAsIs(_ client: WireClient, key: String, value: [UInt8], gz: [UInt8],
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let put = try client.put(key, gz, contentType: "text/plain", headers: gzipHeaders)
        #expect(put.status == 201 || put.status == 204, "PUT gzip: \(put.status) \(put.text)", sourceLocation: sourceLocation)
        let etag = try #require(put.header("ETag"), sourceLocation: sourceLocation)
        let zipped = try client.get(key, headers: acceptGzip)
        #expect(zipped.status == 200, sourceLocation: sourceLocation)
        #expect(zipped.header("Vary")?.lowercased().contains("accept-encoding") == true, sourceLocation: sourceLocation)
        #expect(zipped.header("Content-Type") == "text/plain", sourceLocation: sourceLocation)
        if gz.count >= value.count {
            // docs/design-choices.md: a tiny value whose gzip form is no smaller is answered as identity.
            #expect(S.same(zipped.body, value), sourceLocation: sourceLocation)
            #expect(zipped.header("Content-Encoding") == nil, sourceLocation: sourceLocation)
            #expect(zipped.header("ETag") == etag, sourceLocation: sourceLocation)
        } else {
            #expect(S.same(zipped.body, gz), "gzip bytes differ from those sent (\(zipped.body.count) vs \(gz.count))", sourceLocation: sourceLocation)
            #expect(zipped.header("Content-Encoding") == "gzip", sourceLocation: sourceLocation)
            #expect(zipped.header("Content-Length") == String(gz.count), sourceLocation: sourceLocation)
            #expect(zipped.header("ETag") == String(etag.dropLast()) + "-gz\"", sourceLocation: sourceLocation)
        }
        let plain = try client.get(key)
        #expect(plain.status == 200, sourceLocation: sourceLocation)
        #expect(S.same(plain.body, value), "identity body differs (\(plain.body.count) vs \(value.count))", sourceLocation: sourceLocation)
        #expect(plain.header("Content-Encoding") == nil, sourceLocation: sourceLocation)
        #expect(plain.header("Content-Length") == String(value.count), sourceLocation: sourceLocation)
        #expect(plain.header("ETag") == etag, sourceLocation: sourceLocation)
        #expect(plain.header("Vary")?.lowercased().contains("accept-encoding") == true, sourceLocation: sourceLocation)
    }

    @Test func gzipUploadIsStoredAsSent() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Array(String(repeating: "{\"id\":1,\"name\":\"larder\"}\n", count: 200).utf8)
        try Self.expectStoredAsIs(client, key: "plain", value: value, gz: S.gzip(value))
        // A header with every optional field: FEXTRA, FNAME, FCOMMENT, FHCRC, mtime.
        let fancy = S.gzip(value, level: 9, name: "value.json", comment: "made by a test", extra: [0x41, 0x42, 2, 0, 7, 9],
                           headerCRC: true, mtime: 1_700_000_000)
        try Self.expectStoredAsIs(client, key: "fancy", value: value, gz: fancy)
        // Level 0 (stored blocks), binary data, and the empty value.
        let binary = [UInt8](0...255) + [UInt8](repeating: 0, count: 1000)
        try Self.expectStoredAsIs(client, key: "stored", value: binary, gz: S.gzip(binary, level: 0))
        try Self.expectStoredAsIs(client, key: "empty", value: [], gz: S.gzip([]))
        // Two members concatenated (what `cat a.gz b.gz` makes): one value.
        let two = S.gzip(Array("first-".utf8)) + S.gzip(Array("second".utf8), name: "b")
        try Self.expectStoredAsIs(client, key: "two", value: Array("first-second".utf8), gz: two)
        // Replacing: 204 and the new representation.
        try Self.expectStoredAsIs(client, key: "plain", value: Array("short".utf8), gz: S.gzip(Array("short".utf8)))
        // `x-gzip` is gzip too.
        let x = try client.put("x", S.gzip(Array("xx".utf8)), headers: [("Content-Encoding", "x-gzip")])
        #expect(x.status == 201)
        #expect(try client.get("x").text == "xx")
        // Listing sizes: size is the value, storedSize the file.
        let entries = try client.list().json?["keys"] as? [[String: Any]] ?? []
        let fancyEntry = entries.first { $0["key"] as? String == "fancy" }
        #expect(fancyEntry?["size"] as? Int == value.count)
    }

    /// Made by /usr/bin/gzip from a file (its header names the file).
    @Test func gzipFromTheGzipTool() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Bytes.random(count: 3 << 20, seed: 11, alphabetBits: 3)
        let dir = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/data.bin"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(value)))
        let gz = try S.run(S.gzipTool, ["-c", "-9", file])
        #expect(gz.status == 0)
        #expect(gz.output[3] & 0x08 != 0, "expected FNAME in gzip's header")
        // 3 MiB value, gzip body well over the server's write and prefetch buffers.
        try Self.expectStoredAsIs(client, key: "tool/data", value: value, gz: gz.output)
    }

    @Test(arguments: ["truncated-trailer", "truncated-middle", "truncated-header", "bad-crc", "bad-length",
                      "trailing-garbage", "not-gzip", "gzip-magic-only", "empty", "bad-method",
                      "reserved-flags", "corrupt-deflate", "deflate-without-wrapper"])
    func brokenGzipIsRejectedAndOldValueKept(kind: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let value = Array(String(repeating: "payload ", count: 5000).utf8)
        var gz = S.gzip(value)
        switch kind {
        case "truncated-trailer": gz.removeLast(4)
        case "truncated-middle": gz = Array(gz[0..<(gz.count / 2)])
        case "truncated-header": gz = Array(gz[0..<6])
        case "bad-crc": gz[gz.count - 8] ^= 0x01
        case "bad-length": gz[gz.count - 4] ^= 0x01
        case "trailing-garbage": gz += Array("garbage".utf8)
        case "not-gzip": gz = value
        case "gzip-magic-only": gz = [0x1F, 0x8B]
        case "empty": gz = []
        case "bad-method": gz[2] = 7
        case "reserved-flags": gz[3] |= 0x20
        case "corrupt-deflate": for i in 12..<40 { gz[i] = 0xFF }
        case "deflate-without-wrapper": gz = Array(gz[10..<(gz.count - 8)])
        default: Issue.record("unknown case")
        }
        let old = try client.put("k", "old value", contentType: "text/old")
        #expect(old.status == 201)
        let put = try client.put("k", gz, contentType: "text/new", headers: Self.gzipHeaders)
        S.expectError(put, status: 400, code: "invalid_gzip")
        let get = try client.get("k")
        #expect(get.status == 200)
        #expect(get.text == "old value")
        #expect(get.header("ETag") == old.header("ETag"))
        #expect(get.header("Content-Type") == "text/old")
        // On a new key: nothing is created.
        S.expectError(try client.put("fresh/key", gz, headers: Self.gzipHeaders), status: 400, code: "invalid_gzip")
        #expect(try client.get("fresh/key").status == 404)
        #expect(try S.listAll(client).keys == ["k"])
        // And no temp file is left behind.
        #expect(S.regularFiles(under: server.dataDirectory + "/values").allSatisfy { !$0.contains("\\t") },
                "\(S.regularFiles(under: server.dataDirectory + "/values"))")
    }

    /// A normal PUT read with Accept-Encoding: gzip is a valid gzip stream
    /// of the value (checked with zlib and with zcat).
    @Test(.diskStoreOnly("reads the value file")) func identityUploadServedAsGzip() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // "small" compresses (above the size under which the disk store
        // keeps a value as one stored block: SmallValueTests): a value whose
        // gzip form is no smaller goes out as identity (SendfileTests).
        for (key, value) in [("small", Array(String(repeating: "hello, gzip ", count: 400).utf8)),
                             ("json", Array(String(repeating: "[1,2,3],", count: 10_000).utf8)),
                             ("large", Bytes.random(count: 1 << 20, seed: 5, alphabetBits: 6))] {
            let put = try client.put(key, value, contentType: "application/x-test")
            let get = try client.get(key, headers: Self.acceptGzip)
            #expect(get.status == 200)
            #expect(get.header("Content-Encoding") == "gzip")
            #expect(get.header("Vary")?.lowercased().contains("accept-encoding") == true)
            #expect(get.header("Content-Type") == "application/x-test")
            let etag = try #require(put.header("ETag"))
            #expect(get.header("ETag") == String(etag.dropLast()) + "-gz\"")
            #expect(get.header("Content-Length") == String(get.body.count))
            #expect(Array(get.body.prefix(2)) == [0x1F, 0x8B])
            #expect(S.gunzip(get.body).map { S.same($0, value) } == true, "\(key): zlib decode")
            let zcat = try S.run(S.zcatTool, [], stdin: get.body)
            #expect(zcat.status == 0, "\(zcat.error)")
            #expect(S.same(zcat.output, value), "\(key): zcat decode")
            // The file on disk is those very bytes.
            #expect(S.readFile(server.dataDirectory + "/values/" + key) == get.body)
        }
    }

    @Test func acceptEncodingNegotiation() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // Compressible and above the size the disk store keeps uncompressed.
        let value = Array(String(repeating: "abc", count: 2000).utf8)
        #expect(try client.put("k", value).status == 201)
        let cases: [(String, Bool)] = [("gzip", true), ("GZIP", true), ("deflate, gzip;q=0.5", true), ("*", true),
                                       ("x-gzip", true), ("br, gzip", true), ("gzip;q=0", false), ("identity", false),
                                       ("deflate", false), ("br", false), ("", false)]
        for (header, gzipped) in cases {
            let get = try client.get("k", headers: [("Accept-Encoding", header)])
            #expect(get.status == 200)
            #expect((get.header("Content-Encoding") == "gzip") == gzipped, "Accept-Encoding: \(header)")
            #expect((gzipped ? S.gunzip(get.body) : get.body) == value, "Accept-Encoding: \(header)")
        }
    }

    /// Every value file, whichever way it was written, is a plain gzip
    /// file that the system's gzip reads back to the value.
    @Test(.diskStoreOnly("reads the value files")) func valueFilesAreStandardGzip() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let long = String(repeating: "L", count: 255)
        var values: [String: [UInt8]] = [
            "one": Array("1".utf8),
            "a": Array("a".utf8),
            "a/b": Array("ab".utf8),
            "deep/er/key": Bytes.random(count: 200_000, seed: 9, alphabetBits: 2),
            "bin/all": [UInt8](0...255),
            "empty": [],
            "unicode/café": Array("crème".utf8),
            "\(long)/x": Array("long dir".utf8),
            "noise": Bytes.random(count: 70_000, seed: 10),
        ]
        for (key, value) in values {
            #expect(try S.put(client, key: key, value, contentType: "application/x-\(key.count)").status == 201)
        }
        let gzValue = Array(String(repeating: "sent as gzip ", count: 1000).utf8)
        #expect(try client.put("gz/sent", S.gzip(gzValue, name: "orig.txt"), headers: Self.gzipHeaders).status == 201)
        values["gz/sent"] = gzValue
        for (key, value) in values where !key.hasPrefix(long) {
            let file = server.dataDirectory + "/values/" + S.diskPath(key)
            let zcat = try S.run(S.zcatTool, [file])
            #expect(zcat.status == 0, "zcat \(key): \(zcat.error)")
            #expect(S.same(zcat.output, value), "zcat \(key) printed \(zcat.output.count) bytes, want \(value.count)")
            let gunzip = try S.run(S.gzipTool, ["-dc", file])
            #expect(gunzip.status == 0 && S.same(gunzip.output, value), "gzip -dc \(key)")
        }
        // The 255-byte directory segment is on disk under another name; find it by content.
        let files = S.valueFiles(server.dataDirectory)
        #expect(files.count == values.count)
        var outputs: [[UInt8]] = []
        for file in files {
            let path = server.dataDirectory + "/values/" + file
            let test = try S.run(S.gzipTool, ["-t", path])
            #expect(test.status == 0, "gzip -t \(file): \(test.error)")
            let out = try S.run(S.zcatTool, [path])
            outputs.append(out.output)
            // The FEXTRA flag carries the metadata; the value's key is in the header.
            let bytes = try #require(S.readFile(path))
            #expect(bytes[0] == 0x1F && bytes[1] == 0x8B && bytes[2] == 8)
            #expect(bytes[3] & 0x04 != 0, "\(file): FEXTRA not set")
        }
        #expect(outputs.contains(Array("long dir".utf8)))
        // The gzip CLI reads the FEXTRA field without complaint (and gzip -l works).
        let listed = try S.run(S.gzipTool, ["-l", server.dataDirectory + "/values/one"])
        #expect(listed.status == 0, "\(listed.error)")
    }

    @Test func gzipUploadWhoseHeaderCannotBeKeptIsRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = S.gzip(Array("value".utf8), name: String(repeating: "n", count: 65_500))
        let put = try server.client().put("big-header", body, headers: [("Content-Encoding", "gzip")])
        #expect(put.status == 400)
        #expect(put.json?["error"] as? String == "invalid_gzip")
        #expect(try server.client().get("big-header").status == 404)
    }

    @Test func gzipBodyThatInflatesPastTheValueLimitGets413() throws {
        let server = try TestServer { $0.http.maxBodyBytes = 1 << 20 }
        defer { server.stop() }
        let bomb = S.gzip([UInt8](repeating: 0, count: 2 << 20))   // ~2 KiB of gzip
        #expect(bomb.count < 1 << 20)
        let put = try server.client().put("bomb", bomb, headers: [("Content-Encoding", "gzip")])
        #expect(put.status == 413)
        #expect(try server.client().get("bomb").status == 404)
    }

    @Test func acceptEncodingOnSeparateHeaderLinesIsCombined() throws {
        let server = try TestServer()
        defer { server.stop() }
        // Long and repetitive (and above the disk store's stored-block size),
        // so gzip is smaller and is sent when accepted.
        let value = String(repeating: "value ", count: 1000)
        try server.client().put("k", value)
        let response = try server.client().get("k", headers: [("Accept-Encoding", "br"), ("Accept-Encoding", "gzip")])
        #expect(response.header("Content-Encoding") == "gzip")
        #expect(S.gunzip(response.body) == Array(value.utf8))
    }
}
