/// The checksum a multipart upload was created with
/// (CreateMultipartUpload's `x-amz-checksum-algorithm` and
/// `x-amz-checksum-type`), kept in the upload's record as its attributes'
/// checksum (digest zero): the algorithm every part must carry, and how
/// Complete makes the object's checksum. S3's rules and words, as S3
/// answers them.
struct UploadChecksum: Sendable, Equatable {
    let algorithm: ChecksumAlgorithm
    let type: ChecksumType

    /// What CreateMultipartUpload's headers ask for; nil for no algorithm.
    /// `InvalidRequest` for an algorithm or type S3 does not know, a type
    /// without an algorithm, or a type the algorithm does not allow.
    static func requested(algorithm: String?, type: String?) throws(S3Error) -> UploadChecksum? {
        var chosenType: ChecksumType?
        if let type {
            guard let known = ChecksumType(rawValue: type.uppercased()) else {
                throw S3Error.invalidRequest("Value for x-amz-checksum-type header is invalid.")
            }
            chosenType = known
        }
        guard let algorithm else {
            if chosenType != nil {
                throw S3Error.invalidRequest("The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
            }
            return nil
        }
        guard let known = ChecksumAlgorithm(name: algorithm) else {
            throw S3Error.invalidRequest("Checksum algorithm provided is unsupported. Please try again with any of the valid types: "
                                         + "[CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
        }
        let type = chosenType ?? ChecksumType.default(for: known)
        guard type.allows(known) else {
            throw S3Error.invalidRequest("The \(type.rawValue) checksum type cannot be used with the \(known.rawValue) checksum algorithm.")
        }
        return UploadChecksum(algorithm: known, type: type)
    }

    /// The record's: what the upload was created with.
    init?(record: ObjectAttributes?) {
        guard let checksum = record?.checksum else { return nil }
        self.init(algorithm: checksum.algorithm, type: record?.checksumType ?? .fullObject)
    }

    init(algorithm: ChecksumAlgorithm, type: ChecksumType) {
        self.algorithm = algorithm
        self.type = type
    }

    /// The record's attributes: `headers`, and this as the checksum (digest zero).
    func record(headers: [(name: String, value: String)]) -> ObjectAttributes {
        ObjectAttributes(headers: headers, checksum: algorithm, type: type)
    }

    /// UploadPart: a part carries the upload's checksum (`sent`, the
    /// algorithm of its header or trailer). A composite checksum needs
    /// every part's; a full-object one is computed over the whole object
    /// at Complete, so a part may come without one (S3 computes it then),
    /// but never with another algorithm.
    func check(part sent: ChecksumAlgorithm?) throws(S3Error) {
        if sent == algorithm || (sent == nil && type == .fullObject) { return }
        throw S3Error.invalidRequest("Checksum Type mismatch occurred, expected checksum Type: \(algorithm.rawValue), "
                                     + "actual checksum Type: \(sent?.rawValue ?? "null")")
    }

    /// A composite checksum: the algorithm's digest of the parts' digests
    /// one after another, in part order (answered with `-<parts>`).
    func composite(of partDigests: [[UInt8]]) -> [UInt8] {
        var running = RunningChecksum(algorithm)
        for digest in partDigests { digest.withUnsafeBytes { running.update($0) } }
        return running.finalize()
    }
}
