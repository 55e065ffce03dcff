import Crypto
import LarderHTTP
import FoundationEssentials

/// What a request body must match once it is all in, and the digests kept
/// with the object: the SHA-256 the signature covers
/// (`x-amz-content-sha256`), `Content-MD5`, and a checksum the client sent
/// in a header or an aws-chunked trailer (`x-amz-checksum-*`, any of S3's
/// five). Fed the object's bytes (the framing taken off). The MD5 is always
/// computed: it is the object's ETag.
struct BodyChecks {
    /// The signed payload hash, hex; nil: unsigned.
    private let signedSHA256: String?
    private var sha256: SHA256?
    private var md5 = Insecure.MD5()
    /// `Content-MD5`, decoded.
    private let contentMD5: [UInt8]?
    /// The checksum expected (in a header now, or a trailer later).
    private var checksum: RunningChecksum?
    /// The header's value; nil when it comes in a trailer.
    private let headerChecksum: String?

    /// The digests of a body that passed every check.
    struct Digests {
        let md5: [UInt8]
        let checksum: (algorithm: ChecksumAlgorithm, digest: [UInt8])?
    }

    /// `payload`: what the signature says of the body; `checksumHeader`: an
    /// `x-amz-checksum-*` header sent; `trailerChecksum`: one `x-amz-trailer`
    /// announces; `contentMD5`: the `Content-MD5` header (`InvalidDigest`
    /// when it is not the base64 of 16 bytes).
    init(payload: PayloadHash, checksumHeader: (ChecksumAlgorithm, String)?, trailerChecksum: ChecksumAlgorithm?,
         contentMD5: String?) throws(S3Error) {
        if case .sha256(let hex) = payload { signedSHA256 = hex } else { signedSHA256 = nil }
        if signedSHA256 != nil { sha256 = SHA256() }
        if let contentMD5 {
            guard let decoded = Data(base64Encoded: contentMD5), decoded.count == 16 else {
                throw S3Error(.badRequest, "InvalidDigest", "The Content-MD5 you specified was invalid.")
            }
            self.contentMD5 = Array(decoded)
        } else {
            self.contentMD5 = nil
        }
        checksumAlgorithm = checksumHeader?.0 ?? trailerChecksum
        checksum = checksumAlgorithm.map(RunningChecksum.init)
        headerChecksum = checksumHeader?.1
    }

    /// The algorithm of the checksum the body carries, if any: known before
    /// the body. Stored rather than read through `checksum`: Swift 6.3's
    /// optimizer crashed (an ownership error in CopyPropagation) compiling
    /// a read of `checksum?.algorithm` on a borrowed `BodyChecks`.
    let checksumAlgorithm: ChecksumAlgorithm?

    /// The `x-amz-checksum-*` header a request sent; `InvalidRequest` for more than one.
    static func checksumHeader(in lookup: (String) -> String?) throws(S3Error) -> (ChecksumAlgorithm, String)? {
        let sent = ChecksumAlgorithm.allCases.compactMap { algorithm in lookup(algorithm.header).map { (algorithm, $0) } }
        guard sent.count <= 1 else {
            throw S3Error.invalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
        }
        return sent.first
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        md5.update(bufferPointer: bytes)
        sha256?.update(bufferPointer: bytes)
        checksum?.update(bytes)
    }

    /// The digests, or the error the body earns; `trailers` are an aws-chunked body's.
    func finish(trailers: [String: String]) -> Result<Digests, S3Error> {
        if let sha256, let signedSHA256, signedSHA256 != SignatureV4.hex(sha256.finalize()) {
            return .failure(.xAmzContentSHA256Mismatch)
        }
        let md5 = Array(self.md5.finalize())
        if let contentMD5, contentMD5 != md5 {
            return .failure(S3Error(.badRequest, "BadDigest", "The Content-MD5 you specified did not match what we received."))
        }
        guard let checksum else { return .success(Digests(md5: md5, checksum: nil)) }
        let algorithm = checksum.algorithm
        guard let sent = headerChecksum ?? trailers[algorithm.header] else {
            return .failure(.invalidRequest("the \(algorithm.header) trailer named by x-amz-trailer was not sent"))
        }
        let computed = checksum.finalize()
        guard Data(computed).base64EncodedString() == sent else {
            return .failure(S3Error(.badRequest, "BadDigest",
                                    "The \(algorithm.rawValue.uppercased()) you specified did not match the calculated checksum."))
        }
        return .success(Digests(md5: md5, checksum: (algorithm, computed)))
    }
}

extension BodyChecks {
    /// The checks a request's headers ask for: `x-amz-checksum-*`, a
    /// checksum `x-amz-trailer` announces, `Content-MD5`.
    init(_ head: HTTPRequestHead, payload: PayloadHash) throws(S3Error) {
        var trailer: ChecksumAlgorithm?
        if let named = head.headers["x-amz-trailer"]?.trimmingSpaces.lowercased(), named.hasPrefix("x-amz-checksum-") {
            trailer = ChecksumAlgorithm(rawValue: String(named.dropFirst("x-amz-checksum-".count)))
            if trailer == nil { throw S3Error.invalidRequest("x-amz-trailer names an unknown checksum: \(named)") }
        }
        try self.init(payload: payload, checksumHeader: try Self.checksumHeader { head.headers[$0] }, trailerChecksum: trailer,
                      contentMD5: head.headers["Content-MD5"])
    }
}
