import Foundation
@testable import LarderValueFile
import LarderTestSupport
import Testing

/// The sampling rule on its own, with the measures it rests on.
@Suite(.blockingLane) struct CompressionModeTests {
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

/// A whole value of at most 4 KiB is deflated by a small stream (4 KiB
/// window, 4,096-entry hash): it must compress within 5 % of the full-size
/// stream and inflate with any gzip reader (a smaller window only limits
/// distances).
@Suite(.blockingLane) struct SmallDeflaterTests {
    static func deflate(_ value: [UInt8], small: Bool) throws -> [UInt8] {
        let d = try Deflater(level: 1, small: small)
        var out = [UInt8](repeating: 0, count: value.count + 1024)
        let n = try value.withUnsafeBytes { input in
            try out.withUnsafeMutableBytes { output in
                let r = try d.step(input, output, finish: true)
                #expect(r.ended)
                return r.produced
            }
        }
        return Array(out.prefix(n))
    }

    @Test(arguments: [200, 1024, 4096])
    func smallStreamsCompressAsWell(size: Int) throws {
        let text = String(repeating: "{\"id\":17,\"name\":\"larder\",\"tags\":[\"a\",\"b\"],\"score\":0.25}\n", count: 80)
        let value = Array(text.utf8.prefix(size))
        let small = try Self.deflate(value, small: true)
        let full = try Self.deflate(value, small: false)
        #expect(Double(small.count) <= Double(full.count) * 1.05 + 8, "small \(small.count) vs full \(full.count) bytes")
        var inflated = [UInt8](repeating: 0, count: size + 1)
        let n = try small.withUnsafeBytes { input in
            try inflated.withUnsafeMutableBytes { try SegmentInflater.inflate(input, into: $0, expected: size, isLast: true, path: "small") }
        }
        #expect(Array(inflated.prefix(n)) == value)
    }
}
