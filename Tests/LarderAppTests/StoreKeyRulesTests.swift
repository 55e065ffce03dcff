import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/http-api.md "Keys": what a key may be, over real HTTP.
@Suite(.blockingLane) struct StoreKeyRulesTests {
    static let seg255 = String(repeating: "k", count: 255)
    static let seg256 = String(repeating: "k", count: 256)
    /// 255+255+255+254+1 bytes and 4 slashes: 1024 bytes.
    static let key1024 = [String(repeating: "a", count: 255), String(repeating: "b", count: 255),
                          String(repeating: "c", count: 255), String(repeating: "d", count: 254), "e"].joined(separator: "/")
    /// 255*4+1 bytes and 4 slashes: 1025 bytes.
    static let key1025 = [String(repeating: "a", count: 255), String(repeating: "b", count: 255),
                          String(repeating: "c", count: 255), String(repeating: "d", count: 255), "e"].joined(separator: "/")

    /// Raw (as sent) paths after `/store/` that break a key rule.
    static let invalidPaths: [String] = [
        "a//b", "a/", "/a", "//",                // empty segments ("a/" is a prefix: see below)
        ".", "..", "a/./b", "a/../b", "../x", "a/..",
        "%2e%2e", "a/%2e%2e/b", "%2E", "%2e", "a/%2E", "%2E%2e/x", ".%2e",
        "%00", "a%00b", "a/%00", "%01", "a%1fb", "%7f", "x%0a", "x%0d%0ay",
        "%C2%80", "%c2%9f",                      // C1 control characters
        "%5C", "a%5cb", "a/%5C/b",
        "%ff", "a%C3", "%C3%28", "%ED%A0%80", "%C0%AF",  // invalid UTF-8 (incl. surrogate, overlong '/')
        "%zz", "a%2", "a%", "%g0", "%0g",
        seg256, "a/" + seg256, seg256 + "/a",
        key1025,
        String(repeating: "x", count: 1025),
    ]

    @Test(arguments: invalidPaths.filter { !$0.hasSuffix("/") })
    func invalidKeyIsRejectedForEveryMethod(path: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let label = path.count > 40 ? "\(path.prefix(20))…(\(path.utf8.count) bytes)" : path
        let put = try client.send("PUT", "/store/" + path, body: Array("x".utf8))
        S.expectError(put, status: 400, code: "invalid_key")
        let get = try client.send("GET", "/store/" + path)
        S.expectError(get, status: 400, code: "invalid_key")
        let del = try client.send("DELETE", "/store/" + path)
        S.expectError(del, status: 400, code: "invalid_key")
        let head = try client.send("HEAD", "/store/" + path)
        #expect(head.status == 400, "HEAD \(label)")
        // Nothing was written anywhere.
        #expect(S.valueFiles(server.dataDirectory).isEmpty, "\(label) left files: \(S.valueFiles(server.dataDirectory))")
    }

    /// Listing and bulk delete validate their prefix by the same rules;
    /// above all, `DELETE /store/../` must not delete anything.
    @Test(.diskStoreOnly("lists the value files")) func invalidPrefixesAreRejected() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("a/b", "keep").status == 201)
        for prefix in ["a//", "%2e%2e/", "../", "./", "a/%2E/", "%00/", "%5C/", "%ff/", "%zz/", "a/../", Self.seg256 + "/"] {
            S.expectError(try client.send("GET", "/store/" + prefix), status: 400, code: "invalid_key")
            S.expectError(try client.send("DELETE", "/store/" + prefix), status: 400, code: "invalid_key")
        }
        #expect(try client.get("a/b").text == "keep")
        #expect(S.valueFiles(server.dataDirectory) == ["a\\/b"])
    }

    @Test func longestLegalSegmentAndKeyAreAccepted() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(Self.key1024.utf8.count == 1024)
        #expect(Self.key1025.utf8.count == 1025)
        for (key, value) in [(Self.seg255, "seg255"), (Self.key1024, "key1024"), ("a/" + Self.seg255, "deep255")] {
            let put = try client.put(key, value)
            #expect(put.status == 201, "PUT \(key.utf8.count)-byte key: \(put.status) \(put.text)")
            let get = try client.get(key)
            #expect(get.status == 200)
            #expect(get.text == value)
        }
        let listing = try S.listAll(client)
        #expect(Set(listing.keys) == Set([Self.seg255, Self.key1024, "a/" + Self.seg255]))
        // A key of 1024 bytes through 2-byte characters: 512 × "é" is 1024 bytes but 512
        // characters; segment limits count bytes, so split it into 255-byte-or-less segments.
        let accents = String(repeating: "é", count: 127) // 254 bytes
        let unicode1024 = [accents, accents, accents, accents, "éé"].joined(separator: "/") // 1016 + 4 + 4
        #expect(unicode1024.utf8.count == 1024)
        #expect(try S.put(client, key: unicode1024, Array("u".utf8)).status == 201)
        #expect(try S.get(client, key: unicode1024).text == "u")
        let unicode1025 = unicode1024 + "x"
        S.expectError(try S.put(client, key: unicode1025, Array("u".utf8)), status: 400, code: "invalid_key")
        // 128 × "é" is a 256-byte segment of only 128 characters.
        S.expectError(try S.put(client, key: String(repeating: "é", count: 128), Array("u".utf8)), status: 400, code: "invalid_key")
        #expect(try S.put(client, key: "x/" + String(repeating: "é", count: 127) + "e", Array("u".utf8)).status == 201)
    }

    /// A 255-byte segment as a directory (it has no room for the trailing
    /// backslash on disk): reads, lists (flat, with delimiter, paged),
    /// deletes and bulk-deletes like any other.
    @Test func longSegmentInTheMiddleWorks() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let long = Self.seg255
        let long2 = String(repeating: "k", count: 254) + "l"
        let long0 = String(repeating: "k", count: 254) + "0"   // 255 bytes, sorts before `long`
        let keys = ["a/\(long)/x", "a/\(long)/y/z", "a/\(long)", "a/\(long2)/x", "a/\(long0)", "a/\(long0)/q", "a/b"]
        for (i, key) in keys.enumerated() {
            let put = try client.put(key, "v\(i)")
            #expect(put.status == 201, "PUT key #\(i) (\(key.utf8.count) bytes): \(put.status) \(put.text)")
        }
        for (i, key) in keys.enumerated() {
            #expect(try client.get(key).text == "v\(i)")
        }
        // Full listing: every key once, in byte order.
        let all = try S.listAll(client)
        S.expectKeys(all.keys, S.byteSorted(keys))
        let paged = try S.listAll(client, limit: 1)
        S.expectKeys(paged.keys, S.byteSorted(keys))
        // Listing under the long segment.
        let under = try S.listAll(client, prefix: "a/\(long)/")
        S.expectKeys(under.keys, ["a/\(long)/x", "a/\(long)/y/z"])
        let grouped = try S.listAll(client, prefix: "a/", delimiter: true)
        S.expectKeys(grouped.keys, S.byteSorted(["a/\(long)", "a/\(long0)", "a/b"]))
        S.expectKeys(grouped.prefixes, S.byteSorted(["a/\(long)/", "a/\(long2)/", "a/\(long0)/"]))
        let groupedPaged = try S.listAll(client, prefix: "a/", limit: 1, delimiter: true)
        S.expectKeys(groupedPaged.keys, grouped.keys)
        S.expectKeys(groupedPaged.prefixes, grouped.prefixes)
        // Delete one and bulk-delete the long prefix.
        #expect(try client.delete("a/\(long)/x").status == 204)
        #expect(try client.get("a/\(long)/x").status == 404)
        let bulk = try client.deletePrefix("a/\(long)/")
        #expect(bulk.status == 200)
        #expect(bulk.json?["deleted"] as? Int == 1)
        let left = try S.listAll(client)
        S.expectKeys(left.keys, S.byteSorted(["a/\(long)", "a/\(long2)/x", "a/\(long0)", "a/\(long0)/q", "a/b"]))
        #expect(try client.get("a/\(long)").text == "v2")
    }

    @Test func keyAndDeeperKeyCoexist() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("a", "value of a").status == 201)
        #expect(try client.put("a/b", "value of a/b").status == 201)
        #expect(try client.put("a/b/c", "value of a/b/c").status == 201)
        #expect(try client.get("a").text == "value of a")
        #expect(try client.get("a/b").text == "value of a/b")
        #expect(try client.get("a/b/c").text == "value of a/b/c")
        #expect(try S.listAll(client).keys == ["a", "a/b", "a/b/c"])

        // Deleting the shorter key leaves the deeper ones, and back.
        #expect(try client.delete("a").status == 204)
        #expect(try client.get("a").status == 404)
        #expect(try client.get("a/b").text == "value of a/b")
        #expect(try client.put("a", "a again").status == 201)
        #expect(try client.delete("a/b").status == 204)
        #expect(try client.delete("a/b/c").status == 204)
        #expect(try client.get("a").text == "a again")
        #expect(try client.get("a/b").status == 404)
        #expect(try S.listAll(client).keys == ["a"])
        // The emptied directory does not linger as a prefix.
        let grouped = try client.list("", query: "delimiter=/")
        #expect(grouped.json?["prefixes"] as? [String] == [])
        // a/b can come back after a is there.
        #expect(try client.put("a/b", "b again").status == 201)
        #expect(try client.get("a/b").text == "b again")
        #expect(try client.get("a").text == "a again")
    }

    @Test func unicodeKeysRoundTripAndListInByteOrder() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let nfc = "caf\u{E9}"        // é precomposed
        let nfd = "cafe\u{301}"      // e + combining acute: a different key
        let keys = ["café/ü", "cafe", "cafè", "caf/z", "café", "日本/語", "émoji/😀", "Z", "a", "ü",
                    nfd, nfd + "/x", "𝄞", "ß/ẞ", "x y", "q?r", "h#i", "p%q", "plus+", "semi;colon", "...", ".hidden", "a.", "-"]
        for (i, key) in keys.enumerated() {
            #expect(try S.put(client, key: key, Array("value \(i)".utf8), contentType: "text/plain").status == 201, "PUT \(key)")
        }
        let distinct = Array(Set(keys.map { Array($0.utf8) })).map { String(decoding: $0, as: UTF8.self) }
        #expect(distinct.count == keys.count)
        for (i, key) in keys.enumerated() {
            let get = try S.get(client, key: key)
            #expect(get.status == 200)
            #expect(get.text == "value \(i)", "GET \(key)")
        }
        // Raw UTF-8 in the request target works as well as percent-encoding.
        let raw = try client.send("GET", "/store/café/ü")
        #expect(raw.text == "value 0")
        let listing = try S.listAll(client)
        S.expectKeys(listing.keys, S.byteSorted(keys))
        let paged = try S.listAll(client, limit: 3)
        S.expectKeys(paged.keys, S.byteSorted(keys))
        // NFC and NFD stay distinct keys with their own values.
        #expect(try S.get(client, key: nfc).text == "value 4")
        #expect(try S.get(client, key: nfd).text == "value 10")
        let under = try S.listAll(client, prefix: "café/")
        S.expectKeys(under.keys, ["café/ü"])
    }

    /// No key, valid or not, makes the store write outside `<data>/values`.
    @Test func noKeyEscapesTheDataDirectory() throws {
        let sandbox = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: sandbox) }
        let data = sandbox + "/data"
        let server = try TestServer(dataDirectory: data)
        defer { server.stop() }
        let client = server.client()
        let attempts = [
            "../escaped", "..%2fescaped", "%2e%2e%2fescaped", "%2e%2e/%2e%2e/escaped", "a/../../escaped",
            "a/%2e%2e/%2e%2e/escaped", "%2fescaped", "%2F%2Fescaped", "a%5c..%5c..%5cescaped", "..%5cescaped",
            "%00/../escaped", "gen-1/../../escaped", "values/../../escaped",
        ]
        for path in attempts {
            let response = try client.send("PUT", "/store/" + path, body: Array("x".utf8))
            #expect(response.status == 400, "PUT /store/\(path) answered \(response.status)")
            _ = try client.send("DELETE", "/store/" + path)
            _ = try client.send("DELETE", "/store/" + path + "/")
        }
        // Odd but valid keys stay inside values/.
        let valid = ["...", "....", "-", "~", ".a", "a.", "values", "gen-1", "larder.lock", "trash", "tDEADBEEF", "h0", "name"]
        for key in valid {
            #expect(try client.put(key, key).status == 201, "PUT \(key)")
            #expect(try client.put("d/" + key, key).status == 201, "PUT d/\(key)")
        }
        for key in valid {
            #expect(try client.get(key).text == key)
            #expect(try client.get("d/" + key).text == key)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox) == ["data"])
        let top = Set(try FileManager.default.contentsOfDirectory(atPath: data))
        #expect(top.isSubset(of: ["larder.lock", "version", "values", "gen-1", "trash"]), "\(top)")
        let generation = try FileManager.default.destinationOfSymbolicLink(atPath: data + "/values")
        #expect(generation == "gen-1")
        let files = S.regularFiles(under: data).filter { $0 != "larder.lock" && $0 != "version" }
        #expect(files.allSatisfy { $0.hasPrefix("gen-1/") }, "\(files)")
        #expect(Set(files) == Set(valid.map { "gen-1/" + $0 } + valid.map { "gen-1/d\\/" + $0 }))
        #expect(try S.listAll(client).keys.count == valid.count * 2)
    }
}
