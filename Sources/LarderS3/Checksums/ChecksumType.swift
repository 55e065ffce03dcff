/// How a multipart object's checksum is made from its parts, as S3 names
/// it (`x-amz-checksum-type`): `COMPOSITE`, the algorithm's digest of the
/// parts' digests (answered with `-<parts>`), or `FULL_OBJECT`, the
/// checksum of the whole object's bytes (what every single PUT has).
enum ChecksumType: String, Sendable {
    case composite = "COMPOSITE"
    case fullObject = "FULL_OBJECT"

    /// Whether S3 allows it with `algorithm`: the SHAs have no full-object
    /// form for a multipart upload, CRC64NVME no composite one.
    func allows(_ algorithm: ChecksumAlgorithm) -> Bool {
        switch (self, algorithm) {
        case (.fullObject, .sha1), (.fullObject, .sha256), (.composite, .crc64nvme): false
        default: true
        }
    }

    /// S3's type when CreateMultipartUpload names none: FULL_OBJECT for
    /// CRC64NVME (its only one), COMPOSITE for the others.
    static func `default`(for algorithm: ChecksumAlgorithm) -> ChecksumType {
        algorithm == .crc64nvme ? .fullObject : .composite
    }
}
