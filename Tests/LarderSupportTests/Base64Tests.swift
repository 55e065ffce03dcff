import Foundation
import LarderSupport
import LarderTestSupport
import Testing

/// `Base64` against Foundation's, in pieces cut anywhere.
@Suite(.blockingLane) struct Base64Tests {
    @Test func encodesAsFoundationDoesInPiecesOfThreeBytes() {
        for count in [0, 1, 2, 3, 4, 5, 47, 48, 49, 1000] {
            let bytes = Bytes.random(count: count, seed: UInt64(count + 1))
            let expected = Array(Data(bytes).base64EncodedString().utf8)
            #expect(Base64.encode(bytes) == expected, "\(count) bytes")
            #expect(Base64.encodedCount(count) == expected.count)
            // In pieces of 3n bytes, the last one shorter.
            var pieces: [UInt8] = []
            var offset = 0
            while offset < count {
                let n = min(6, count - offset)
                bytes[offset..<(offset + n)].withUnsafeBytes { Base64.encode($0, into: &pieces) }
                offset += n
            }
            #expect(pieces == expected, "\(count) bytes in pieces")
        }
    }

    @Test func decodesTextCutAnywhere() throws {
        for count in [0, 1, 2, 3, 100, 101, 102] {
            let bytes = Bytes.random(count: count, seed: UInt64(count + 7))
            let text = Array(Data(bytes).base64EncodedString().utf8)
            for cut in 0...text.count {
                var decoder = Base64.Decoder()
                var out: [UInt8] = []
                try text[0..<cut].withUnsafeBytes { try decoder.decode($0, into: &out) }
                try text[cut...].withUnsafeBytes { try decoder.decode($0, into: &out) }
                try decoder.finish(into: &out)
                #expect(out == bytes, "\(count) bytes cut at \(cut)")
            }
        }
    }

    @Test func refusesAnythingButOneCanonicalEncoding() throws {
        for text in ["Q", "QU", "QUI", "Q===", "=QUJ", "QU=J", "QUJD=", "QUJ=QUJD", "QU==QUJD", "QUJ\n", "QU J", "QUI-", "QR==", "QUK="] {
            #expect(throws: Base64.DecodingError.self, "\(text)") {
                _ = try Array(text.utf8).withUnsafeBytes { try Base64.decode($0) }
            }
        }
        #expect(try Array("QUI=".utf8).withUnsafeBytes { try Base64.decode($0) } == Array("AB".utf8))
    }
}
