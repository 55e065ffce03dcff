import Foundation
import LarderTestSupport
import LarderWire
import Testing

private typealias S = StoreTestSupport

/// docs/reliability.md: no key and no fixture link reaches outside the
/// data. A property test: random byte strings (biased toward the pieces
/// that break path handling: `/`, `.`, `..`, `%`, `\`, NUL, bytes that are
/// not UTF-8, 255-byte segments) PUT as keys through the real server.
@Suite(.blockingLane) struct PathSafetyTests {
    static let pieces: [[UInt8]] = [
        Array("a".utf8), Array("b".utf8), Array("key".utf8), Array("c-1".utf8), Array("a".utf8), Array("b".utf8), Array("/".utf8), Array(".".utf8), Array("..".utf8), Array("%".utf8),
        Array("\\".utf8), [0], Array(" ".utf8), [0x7F], [0xC3, 0xA9], [0xFF], [0xC3], Array("~".utf8), Array("\\t".utf8),
        Array("values".utf8), Array("gen-1".utf8), [0x0A], Array("?".utf8), Array("#".utf8),
    ]

    /// Random keys from the random bytes `Bytes.random` makes for `seed`.
    static func keys(_ count: Int, seed: UInt64) -> [[UInt8]] {
        let random = Bytes.random(count: count * 64, seed: seed)
        var at = 0
        func next() -> Int { defer { at += 1 }; return Int(random[at % random.count]) }
        return (0..<count).map { _ in
            var key: [UInt8] = []
            let length = 1 + next() % 8
            for _ in 0..<length {
                switch next() % 32 {
                case 0: key += [UInt8](repeating: UInt8(ascii: "x"), count: 250 + next() % 10)  // around the 255-byte segment limit
                case 1: key.append(UInt8(next()))                                                // any byte
                default: key += pieces[next() % pieces.count]
                }
            }
            return key
        }
    }

    @Test func randomKeysStayInsideTheDataAndRoundTrip() throws {
        let sandbox = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: sandbox) }
        let server = try TestServer(dataDirectory: sandbox + "/data")
        defer { server.stop() }
        let client = server.client()
        var accepted: [[UInt8]: [UInt8]] = [:]
        var refused = 0
        for (i, key) in Self.keys(1500, seed: 42).enumerated() {
            let value = Array("value \(i)".utf8)
            let response = try client.send("PUT", "/store/" + S.encode(bytes: key), body: value)
            switch response.status {
            case 201, 204:
                accepted[key] = value
            // 405 only for a path ending in `/`, which names a prefix and cannot be PUT.
            case let status where status == 400 || (status == 405 && key.last == UInt8(ascii: "/")):
                refused += 1
                let code = response.json?["error"] as? String
                #expect(["invalid_key", "invalid_prefix", "method_not_allowed"].contains(code), "key \(key): \(response.text)")
            default:
                Issue.record("PUT of key bytes \(key) answered \(response.status): \(response.text)")
            }
        }
        #expect(accepted.count > 200 && refused > 200, "the generator covers both sides: \(accepted.count) accepted, \(refused) refused")
        for (key, value) in accepted {
            let got = try client.send("GET", "/store/" + S.encode(bytes: key))
            #expect(got.status == 200 && got.body == value, "key \(key) reads back")
        }
        // Every accepted key is listed once, byte for byte; nothing else is.
        let listed = Set(try S.listAll(client).keys.map { Array($0.utf8) })
        #expect(listed == Set(accepted.keys))
        // Every file is inside the data directory's one generation.
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox) == ["data"])
        let files = S.regularFiles(under: sandbox + "/data").filter { $0 != "larder.lock" && $0 != "version" }
        #expect(files.allSatisfy { $0.hasPrefix("gen-1/") }, "\(files.filter { !$0.hasPrefix("gen-1/") })")
        // One file per key, besides the `\name` file of a directory whose
        // 255-byte name has no room for its backslash (docs/storage.md, "On disk").
        #expect(files.filter { !$0.hasSuffix("/\\name") }.count == accepted.count)
    }

    @Test func fixtureLinksAreNeverFollowedOut() throws {
        let sandbox = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: sandbox) }
        let fm = FileManager.default
        let fixtures = sandbox + "/fixtures", secret = sandbox + "/secret"
        for dir in [fixtures + "/inside", secret] { try fm.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        try Data("secret\n".utf8).write(to: URL(fileURLWithPath: secret + "/passwd"))
        try Data("shared\n".utf8).write(to: URL(fileURLWithPath: fixtures + "/inside/shared.txt"))
        try fm.createSymbolicLink(atPath: fixtures + "/out-file", withDestinationPath: secret + "/passwd")
        try fm.createSymbolicLink(atPath: fixtures + "/out-dir", withDestinationPath: "../secret")
        try fm.createSymbolicLink(atPath: fixtures + "/etc", withDestinationPath: "/etc")
        try fm.createSymbolicLink(atPath: fixtures + "/in-file", withDestinationPath: "inside/shared.txt")
        try fm.createSymbolicLink(atPath: fixtures + "/in-dir", withDestinationPath: "inside")
        try fm.createSymbolicLink(atPath: fixtures + "/inside/loop", withDestinationPath: "..")
        try fm.createSymbolicLink(atPath: fixtures + "/dangling", withDestinationPath: "nowhere")
        let server = try TestServer(dataDirectory: sandbox + "/data") { $0.fixturesDirectory = fixtures }
        defer { server.stop() }
        let client = server.client()
        for key in ["out-file", "out-dir/passwd", "etc/passwd", "etc/hostname", "dangling"] {
            #expect(try client.get(key).status == 404, "\(key) is outside the fixtures")
        }
        #expect(try client.get("in-file").text == "shared\n", "a link inside the fixtures is followed")
        #expect(try client.get("inside/shared.txt").text == "shared\n")
        let keys = try S.listAll(client).keys
        #expect(!keys.contains { $0.hasPrefix("out-") || $0.hasPrefix("etc") || $0.hasPrefix("dangling") }, "\(keys)")
        // A link to a directory inside is an alias; the loop (inside/loop -> ..) is cut.
        #expect(try client.get("in-dir/shared.txt").text == "shared\n")
        #expect(Set(keys) == ["in-dir/shared.txt", "in-file", "inside/shared.txt"], "\(keys)")
    }
}
