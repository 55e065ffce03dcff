import CZlib
import Foundation

/// Deterministic test data and checksums: the one generator of test bytes.
package enum Bytes {
    /// xorshift64* bytes; `alphabetBits` < 8 makes the data compressible.
    package static func random(count: Int, seed: UInt64, alphabetBits: Int = 8) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var x = seed | 1
        let mask: UInt64 = alphabetBits >= 8 ? ~0 : 0x0101_0101_0101_0101 &* UInt64((1 << alphabetBits) - 1)
        let base: UInt64 = alphabetBits >= 8 ? 0 : 0x4141_4141_4141_4141 // from 'A'
        out.withUnsafeMutableBytes { raw in
            let words = raw.count / 8
            let p = raw.baseAddress!
            for i in 0..<words {
                x ^= x >> 12; x ^= x << 25; x ^= x >> 27
                let v = ((x &* 0x2545_F491_4F6C_DD1D) & mask) &+ base
                p.storeBytes(of: v, toByteOffset: i * 8, as: UInt64.self)
            }
            for i in (words * 8)..<raw.count { raw[i] = UInt8(truncatingIfNeeded: (x >> UInt64(i % 8 * 8)) & 0x3F) &+ 0x41 }
        }
        return out
    }

    package static func crc32(_ bytes: UnsafeRawBufferPointer, _ crc: UInt32 = 0) -> UInt32 {
        UInt32(CZlib.crc32(uLong(crc), bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)))
    }

    package static func crc32(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { crc32($0) } }
}
