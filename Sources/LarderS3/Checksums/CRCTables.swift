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

    static func update32(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer, _ tables: [[UInt32]]) -> UInt32 {
        var c = crc
        var i = 0
        let n = bytes.count
        tables.withUnsafeBufferPointer { t in
            let (t0, t1, t2, t3) = (t[0], t[1], t[2], t[3])
            let (t4, t5, t6, t7) = (t[4], t[5], t[6], t[7])
            while i + 8 <= n {
                let lo = c ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
                c = t7[Int(lo & 0xFF)] ^ t6[Int(lo >> 8 & 0xFF)] ^ t5[Int(lo >> 16 & 0xFF)] ^ t4[Int(lo >> 24)]
                    ^ t3[Int(bytes[i + 4])] ^ t2[Int(bytes[i + 5])] ^ t1[Int(bytes[i + 6])] ^ t0[Int(bytes[i + 7])]
                i += 8
            }
            while i < n {
                c = (c >> 8) ^ t0[Int((c ^ UInt32(bytes[i])) & 0xFF)]
                i += 1
            }
        }
        return c
    }

    static func update64(_ crc: UInt64, _ bytes: UnsafeRawBufferPointer, _ tables: [[UInt64]]) -> UInt64 {
        var c = crc
        var i = 0
        let n = bytes.count
        tables.withUnsafeBufferPointer { t in
            let (t0, t1, t2, t3) = (t[0], t[1], t[2], t[3])
            let (t4, t5, t6, t7) = (t[4], t[5], t[6], t[7])
            while i + 8 <= n {
                var word: UInt64 = 0
                for j in 0..<8 { word |= UInt64(bytes[i + j]) << (8 * UInt64(j)) }
                let x = c ^ word
                c = t7[Int(x & 0xFF)] ^ t6[Int(x >> 8 & 0xFF)] ^ t5[Int(x >> 16 & 0xFF)] ^ t4[Int(x >> 24 & 0xFF)]
                    ^ t3[Int(x >> 32 & 0xFF)] ^ t2[Int(x >> 40 & 0xFF)] ^ t1[Int(x >> 48 & 0xFF)] ^ t0[Int(x >> 56)]
                i += 8
            }
            while i < n {
                c = (c >> 8) ^ t0[Int((c ^ UInt64(bytes[i])) & 0xFF)]
                i += 1
            }
        }
        return c
    }
}
