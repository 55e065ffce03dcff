import Foundation
import LarderTestSupport
import Testing
@testable import LarderStoreVocabulary
#if canImport(Glibc)
import Glibc
#endif

@Suite(.blockingLane) struct StoreKeyUnitTests {
    @Test func validKeys() throws {
        for key in ["a", "a/b", "a/b/c", "...", ".a", "a.", "café/ü", String(repeating: "x", count: 255),
                    [String](repeating: String(repeating: "y", count: 255), count: 4).joined(separator: "/")] {
            let k = try StoreKey(key)
            #expect(k.string == key)
            #expect(k.segments == key.split(separator: "/").map(String.init))
        }
        let k = try StoreKey(percentEncoded: "caf%C3%A9/%C3%BC%20x")
        #expect(k.string == "café/ü x")
        #expect(k.segments == ["café", "ü x"])
    }

    @Test func invalidKeys() {
        let invalid: [[UInt8]] = [
            [], Array("/".utf8), Array("a//b".utf8), Array("a/".utf8), Array("/a".utf8),
            Array(".".utf8), Array("..".utf8), Array("a/./b".utf8), Array("a/..".utf8),
            [0x61, 0x00], [0x01], [0x61, 0x1F], [0x7F], [0x61, 0x5C, 0x62], [0xFF], [0xC3], [0xC0, 0xAF], [0xED, 0xA0, 0x80],
            [0xC2, 0x85],
            Array(String(repeating: "x", count: 256).utf8),
            Array(([String](repeating: String(repeating: "y", count: 255), count: 4).joined(separator: "/") + "/z").utf8),
        ]
        for bytes in invalid { Self.expectInvalidKey(bytes) }
        for encoded in ["%2e%2e", "%2E", "a/%2e", "%00", "%zz", "a%", "a%2", "%5c", "%ff"] {
            #expect(throws: StoreError.self, "\(encoded)") { try StoreKey(percentEncoded: Substring(encoded)) }
        }
    }

    @Test func prefixes() throws {
        #expect(try StorePrefix(bytes: []).string == "")
        #expect(try StorePrefix(bytes: Array("a/b/".utf8)).segments == ["a", "b"])
        #expect(try StorePrefix(bytes: Array("a/b/".utf8)).string == "a/b/")
        #expect(throws: StoreError.self) { try StorePrefix(bytes: Array("a//".utf8)) }
        #expect(throws: StoreError.self) { try StorePrefix(bytes: Array("../".utf8)) }
        #expect(throws: StoreError.self) { try StorePrefix(bytes: Array("a\\/".utf8)) }
    }

    static func expectInvalidKey(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try StoreKey(bytes: bytes)
            Issue.record("accepted \(bytes.prefix(20))… (\(bytes.count) bytes)", sourceLocation: sourceLocation)
        } catch let error as StoreError {
            guard case .invalidKey = error else {
                Issue.record("wrong error \(error)", sourceLocation: sourceLocation); return
            }
        } catch {
            Issue.record("wrong error \(error)", sourceLocation: sourceLocation)
        }
    }
}
