import CZlib
import Crypto
import Foundation

/// What a request body must match once it is all in: the SHA-256 the
/// signature covers (`x-amz-content-sha256`), and a checksum the client
/// sent in a header or an aws-chunked trailer (`x-amz-checksum-crc32`,
/// `-sha1`, `-sha256`). Fed the object's bytes (the framing taken off);
/// each digest is computed only when something is to be checked against it.
struct BodyChecks {
    /// The signed payload hash, hex; nil: unsigned.
    private let signedSHA256: String?
    /// Which `x-amz-checksum-*` is expected (in a header now, or a trailer later).
    private let checksum: ChecksumAlgorithm?
    /// The header's value; nil when it comes in a trailer.
    private let headerChecksum: String?

    private var sha256: SHA256?
    private var sha1: Insecure.SHA1?
    private var crc: uLong = 0

    enum ChecksumAlgorithm: String {
        case crc32, sha1, sha256
        var header: String { "x-amz-checksum-" + rawValue }
    }

    /// `payload`: what the signature says of the body; `headers`: the
    /// request's, for a checksum header or `x-amz-trailer` naming one.
    init(payload: PayloadHash, checksumHeader: (ChecksumAlgorithm, String)?, trailerChecksum: ChecksumAlgorithm?) {
        if case .sha256(let hex) = payload { signedSHA256 = hex } else { signedSHA256 = nil }
        checksum = checksumHeader?.0 ?? trailerChecksum
        headerChecksum = checksumHeader?.1
        if signedSHA256 != nil || checksum == .sha256 { sha256 = SHA256() }
        if checksum == .sha1 { sha1 = Insecure.SHA1() }
        crc = crc32(0, nil, 0)
    }

    /// The checksum headers of a request the face verifies (CRC32C and
    /// CRC64NVME are taken unverified for now).
    static func checksumHeader(in lookup: (String) -> String?) -> (ChecksumAlgorithm, String)? {
        for algorithm in [ChecksumAlgorithm.crc32, .sha1, .sha256] {
            if let value = lookup(algorithm.header) { return (algorithm, value) }
        }
        return nil
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        sha256?.update(bufferPointer: bytes)
        sha1?.update(bufferPointer: bytes)
        if checksum == .crc32, let base = bytes.baseAddress {
            crc = crc32(crc, base.assumingMemoryBound(to: Bytef.self), uInt(bytes.count))
        }
    }

    /// The error the body earns, if any; `trailers` are an aws-chunked body's.
    func failure(trailers: [String: String]) -> S3Error? {
        var sha256Hex: String?
        if let sha256 {
            let digest = sha256.finalize()
            sha256Hex = SignatureV4.hex(digest)
            if let signedSHA256, signedSHA256 != sha256Hex { return .xAmzContentSHA256Mismatch }
        }
        guard let checksum else { return nil }
        guard let sent = headerChecksum ?? trailers[checksum.header] else {
            return .invalidRequest("the \(checksum.header) trailer named by x-amz-trailer was not sent")
        }
        let computed: [UInt8]
        switch checksum {
        case .crc32:
            let c = UInt32(truncatingIfNeeded: crc)
            computed = [UInt8(c >> 24), UInt8(c >> 16 & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c & 0xFF)]
        case .sha1:
            computed = Array(sha1!.finalize())
        case .sha256:
            computed = Array(sha256!.finalize())
        }
        guard Data(computed).base64EncodedString() == sent else {
            return S3Error(.badRequest, "BadDigest", "The \(checksum.rawValue.uppercased()) you specified did not match the calculated checksum.")
        }
        return nil
    }
}
