/// CRC-32C (Castagnoli), as S3's `x-amz-checksum-crc32c` is computed:
/// reflected polynomial 0x82F63B78, initial value and final XOR all ones.
/// zlib has only the IEEE CRC-32 and swift-crypto no CRC at all, so it is
/// computed here, slicing by 8 bytes (about 1 GB/s on one core).
struct CRC32C {
    private(set) var state: UInt32 = 0xFFFF_FFFF

    /// The checksum of the bytes so far.
    var value: UInt32 { ~state }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        state = CRCTables.update(state, bytes, CRCTables.crc32c)
    }

    /// Big-endian, as S3 encodes it (then base64).
    var bigEndianBytes: [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
}
