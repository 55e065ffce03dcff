import CZlib
import Foundation

/// Deterministic test data and checksums.
enum Bytes {
    /// `count` pseudo-random bytes from `seed` (xorshift), partly repetitive
    /// so gzip has something to do.
    static func pattern(seed: UInt64, count: Int) -> [UInt8] {
        var state = seed &* 0x9E3779B97F4A7C15 | 1
        var out = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            // Every other 8-byte word is text-like, every other random.
            let word = (i / 8) % 2 == 0 ? state : 0x2020_6465_7473_6574 &+ (state & 0x0707_0707)
            for b in 0..<8 where i + b < count { out[i + b] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(b))) }
            i += 8
        }
        return out
    }

    static func crc32(_ bytes: UnsafeRawBufferPointer, _ crc: UInt32 = 0) -> UInt32 {
        UInt32(CZlib.crc32(uLong(crc), bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)))
    }
}
