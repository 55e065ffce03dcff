/// Slicing-by-8 tables of the two reflected CRCs, made once.
enum CRCTables {
    static let crc32c: [[UInt32]] = tables(polynomial: UInt32(0x82F6_3B78))
    static let crc64nvme: [[UInt64]] = tables(polynomial: UInt64(0x9A6C_9329_AC4B_C9B5))

    /// Table k maps a byte to its CRC when followed by k zero bytes.
    static func tables<T: FixedWidthInteger & UnsignedInteger>(polynomial: T) -> [[T]] {
        var t = [[T]](repeating: [T](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = T(i)
            for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ polynomial : c >> 1 }
            t[0][i] = c
        }
        for k in 1..<8 { for i in 0..<256 { t[k][i] = (t[k - 1][i] >> 8) ^ t[0][Int(t[k - 1][i] & 0xFF)] } }
        return t
    }

    /// The CRC `crc` (its running state) over `bytes` more, with `tables`
    /// of `tables(polynomial:)`. Eight bytes at a time: the word of eight
    /// data bytes, the state folded into its low bytes, looked up byte by
    /// byte in the table for how many bytes follow it. One body for both
    /// widths (a 32-bit state leaves the word's high bytes as data).
    static func update<T: FixedWidthInteger & UnsignedInteger>(_ crc: T, _ bytes: UnsafeRawBufferPointer, _ tables: [[T]]) -> T {
        var c = crc
        var i = 0
        let n = bytes.count
        tables.withUnsafeBufferPointer { t in
            let (t0, t1, t2, t3) = (t[0], t[1], t[2], t[3])
            let (t4, t5, t6, t7) = (t[4], t[5], t[6], t[7])
            while i + 8 <= n {
                var word: UInt64 = 0
                for j in 0..<8 { word |= UInt64(bytes[i + j]) << (8 * UInt64(j)) }
                let x = UInt64(c) ^ word
                c = t7[Int(x & 0xFF)] ^ t6[Int(x >> 8 & 0xFF)] ^ t5[Int(x >> 16 & 0xFF)] ^ t4[Int(x >> 24 & 0xFF)]
                    ^ t3[Int(x >> 32 & 0xFF)] ^ t2[Int(x >> 40 & 0xFF)] ^ t1[Int(x >> 48 & 0xFF)] ^ t0[Int(x >> 56)]
                i += 8
            }
            while i < n {
                c = (c >> 8) ^ t0[Int(truncatingIfNeeded: (c ^ T(bytes[i])) & 0xFF)]
                i += 1
            }
        }
        return c
    }
}
