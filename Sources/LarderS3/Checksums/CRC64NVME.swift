/// CRC-64/NVME, as S3's `x-amz-checksum-crc64nvme` is computed: reflected
/// polynomial 0x9A6C9329AC4BC9B5, initial value and final XOR all ones.
struct CRC64NVME {
    private(set) var state: UInt64 = 0xFFFF_FFFF_FFFF_FFFF

    var value: UInt64 { ~state }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        state = CRCTables.update(state, bytes, CRCTables.crc64nvme)
    }

    var bigEndianBytes: [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
}
