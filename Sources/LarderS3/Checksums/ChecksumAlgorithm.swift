/// The five checksums S3 takes with an upload (`x-amz-checksum-<name>`,
/// or in an aws-chunked trailer), all verified and kept with the object.
enum ChecksumAlgorithm: String, CaseIterable, Sendable {
    case crc32, crc32c, crc64nvme, sha1, sha256

    /// The request and response header that carries it.
    var header: String { "x-amz-checksum-" + rawValue }

    /// Bytes of the digest.
    var digestLength: Int {
        switch self {
        case .crc32, .crc32c: 4
        case .crc64nvme: 8
        case .sha1: 20
        case .sha256: 32
        }
    }

    /// The algorithm as `x-amz-sdk-checksum-algorithm` or `x-amz-checksum-algorithm` name it (`CRC32`, `SHA256`).
    init?(name: String) { self.init(rawValue: name.lowercased()) }

    /// Its ordinal in `ObjectAttributes`' encoding (0 is none).
    var code: UInt8 { UInt8(Self.allCases.firstIndex(of: self)! + 1) }
    init?(code: UInt8) {
        guard code >= 1, Int(code) <= Self.allCases.count else { return nil }
        self = Self.allCases[Int(code) - 1]
    }
}
