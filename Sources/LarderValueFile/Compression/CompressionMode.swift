import CZlib
#if canImport(Glibc)
import Glibc
#endif

/// How the store deflates one value, chosen from a sample of its first
/// bytes (`CompressionMode.choose`). Every mode writes a standard raw
/// deflate stream, so the file stays one gzip member that `zcat` reads.
public enum CompressionMode: String, Sendable, CaseIterable {
    /// The zlib level (1...9) for values a store compresses itself, unless
    /// told otherwise. Level 1 was measured to store 1 KiB JSON at the same
    /// ratio class as 6 for a fraction of the CPU; see docs/compression.md.
    public static let defaultGzipLevel: Int32 = 1

    /// Deflate at the configured level: the data repeats itself.
    case deflate
    /// Huffman coding only (`Z_HUFFMAN_ONLY`): no match search, which is
    /// where zlib spends its time on text without repeats (base64, hex);
    /// it still saves what a skewed byte distribution allows.
    case huffman
    /// Stored blocks (level 0): the data looks random, so compression
    /// cannot pay; copying costs about 5 bytes per 64 KiB.
    case stored

    /// The bytes looked at before choosing: the first 64 KiB of the value.
    public static let sampleBytes = 64 * 1024
    /// A whole value shorter than this is one stored block where the store
    /// says so (`UploadDestination.storesSmallValuesUncompressed`): its file
    /// (Larder's header, 5 bytes of block header, the value, 8 of trailer)
    /// then fits one 4 KiB page.
    public static let storedWholeBelow = 4096 - 512
    /// Values that end before this many bytes keep the configured level
    /// without looking: deciding would cost about what compressing them does.
    public static let minimumSampledBytes = 4 * 1024
    /// At least this fraction of the sample covered by repeats of 4 bytes or
    /// more: deflate (JSON measures 0.95, English text 0.85, base64 of random
    /// bytes 0.01, random bytes 0).
    static let deflateRepeatFraction = 0.25
    /// At or above this entropy (bits per byte), Huffman coding would save at
    /// most 1 - 7.5/8 ≈ 6 % at a fifth of the speed of storing: store.
    static let storeEntropyBits = 7.5

    /// The zlib level and strategy for this mode, given the configured level.
    func parameters(configuredLevel: Int32) -> (level: Int32, strategy: Int32) {
        switch self {
        case .deflate: return (configuredLevel, Z_DEFAULT_STRATEGY)
        case .huffman: return (max(1, configuredLevel), Z_HUFFMAN_ONLY)
        case .stored: return (0, Z_DEFAULT_STRATEGY)
        }
    }

    var poolIndex: Int {
        switch self {
        case .deflate: 0
        case .huffman: 1
        case .stored: 2
        }
    }

    /// Chooses the mode for a value from `sample` (its first bytes). Two
    /// linear passes, about 0.1 ms for 64 KiB, where level 1 on the same
    /// sample takes 1-10 ms: the decision costs a few percent at most.
    static func choose(sample: UnsafeRawBufferPointer) -> CompressionMode {
        if repeatFraction(sample) >= deflateRepeatFraction { return .deflate }
        return entropyBits(sample) >= storeEntropyBits ? .stored : .huffman
    }

    /// Order-0 entropy in bits per byte: what Huffman coding can reach.
    static func entropyBits(_ bytes: UnsafeRawBufferPointer) -> Double {
        guard bytes.count > 0 else { return 0 }
        var histogram = [Int](repeating: 0, count: 256)
        histogram.withUnsafeMutableBufferPointer { h in
            for b in bytes { h[Int(b)] += 1 }
        }
        let n = Double(bytes.count)
        var bits = 0.0
        for c in histogram where c > 0 {
            let p = Double(c) / n
            bits -= p * log2(p)
        }
        return bits
    }

    /// The fraction of `bytes` inside a repeat of 4 or more bytes found by a
    /// one-probe hash of the last position of each 4-byte sequence: the
    /// matches deflate would find, roughly, without its chains.
    static func repeatFraction(_ bytes: UnsafeRawBufferPointer) -> Double {
        let n = bytes.count
        guard n >= 8 else { return 0 }
        let tableBits = 12
        var table = [Int32](repeating: -1, count: 1 << tableBits)
        var covered = 0
        table.withUnsafeMutableBufferPointer { table in
            let p = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            func word(_ i: Int) -> UInt32 { UnsafeRawPointer(p + i).loadUnaligned(as: UInt32.self) }
            var i = 0
            while i + 4 <= n {
                let w = word(i)
                let slot = Int((w &* 2_654_435_761) >> UInt32(32 - tableBits))
                let candidate = Int(table[slot])
                table[slot] = Int32(i)
                if candidate >= 0 && word(candidate) == w {
                    var length = 4
                    while i + length < n && length < 258 && p[candidate + length] == p[i + length] { length += 1 }
                    covered += length
                    i += length
                } else {
                    i += 1
                }
            }
        }
        return Double(covered) / Double(n)
    }
}
