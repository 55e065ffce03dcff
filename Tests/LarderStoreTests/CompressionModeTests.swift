import Foundation
@testable import LarderStore
import Testing

/// The sampling rule on its own, with the measures it rests on.
@Suite struct CompressionModeTests {
    static func choose(_ bytes: [UInt8]) -> CompressionMode { bytes.withUnsafeBytes { CompressionMode.choose(sample: $0) } }

    static func random(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &g) }
    }

    @Test func eachKindOfDataGetsItsMode() {
        let random = Self.random(65_536)
        #expect(Self.choose(random) == .stored)
        #expect(Self.choose(Array(Data(random).base64EncodedData().prefix(65_536))) == .huffman)
        // Hex: 4 bits per byte, no repeats: Huffman saves half.
        #expect(Self.choose(Array(random.prefix(32_768).map { String(format: "%02x", $0) }.joined().utf8)) == .huffman)
        let text = String(repeating: "{\"name\":\"larder\",\"size\":1024,\"tags\":[\"a\",\"b\"]}\n", count: 1400)
        #expect(Self.choose(Array(text.utf8.prefix(65_536))) == .deflate)
        #expect(Self.choose([UInt8](repeating: 0, count: 65_536)) == .deflate)
    }

    @Test func measures() {
        let random = Self.random(65_536)
        random.withUnsafeBytes {
            #expect(CompressionMode.entropyBits($0) > 7.99)
            #expect(CompressionMode.repeatFraction($0) < 0.01)
        }
        let zeros = [UInt8](repeating: 0, count: 4096)
        zeros.withUnsafeBytes {
            #expect(CompressionMode.entropyBits($0) == 0)
            #expect(CompressionMode.repeatFraction($0) > 0.99)
        }
    }
}
