import CZlib
import Crypto

/// One checksum being computed over a body as it streams: CRC32 from
/// zlib, SHA-1 and SHA-256 from swift-crypto, CRC32C and CRC64NVME here.
struct RunningChecksum {
    let algorithm: ChecksumAlgorithm
    private var crc32Value: uLong = crc32(0, nil, 0)
    private var crc32c = CRC32C()
    private var crc64 = CRC64NVME()
    private var sha1: Insecure.SHA1?
    private var sha256: SHA256?

    init(_ algorithm: ChecksumAlgorithm) {
        self.algorithm = algorithm
        if algorithm == .sha1 { sha1 = Insecure.SHA1() }
        if algorithm == .sha256 { sha256 = SHA256() }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch algorithm {
        case .crc32:
            if let base = bytes.baseAddress {
                crc32Value = crc32(crc32Value, base.assumingMemoryBound(to: Bytef.self), uInt(bytes.count))
            }
        case .crc32c: crc32c.update(bytes)
        case .crc64nvme: crc64.update(bytes)
        case .sha1: sha1!.update(bufferPointer: bytes)
        case .sha256: sha256!.update(bufferPointer: bytes)
        }
    }

    /// The digest, big-endian for the CRCs, as S3 base64-encodes it.
    func finalize() -> [UInt8] {
        switch algorithm {
        case .crc32:
            let c = UInt32(truncatingIfNeeded: crc32Value)
            return withUnsafeBytes(of: c.bigEndian, Array.init)
        case .crc32c: return crc32c.bigEndianBytes
        case .crc64nvme: return crc64.bigEndianBytes
        case .sha1: return Array(sha1!.finalize())
        case .sha256: return Array(sha256!.finalize())
        }
    }
}
