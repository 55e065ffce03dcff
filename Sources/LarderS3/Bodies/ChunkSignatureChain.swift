import Crypto
import LarderSupport

/// The chain of signatures of a signed `aws-chunked` body
/// (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`): each chunk's signature
/// is the HMAC, with the request's signing key, of
/// `AWS4-HMAC-SHA256-PAYLOAD`, the date, the scope, the previous signature
/// (the request's own for the first chunk), the empty hash and the chunk's
/// SHA-256; the trailing headers' of `AWS4-HMAC-SHA256-TRAILER`, the date,
/// the scope, the last chunk's signature and the trailer lines' SHA-256.
/// Chaining makes every chunk count: none can be dropped, reordered or
/// changed without the next signature failing.
struct ChunkSignatureChain {
    static let chunkAlgorithm = "AWS4-HMAC-SHA256-PAYLOAD"
    static let trailerAlgorithm = "AWS4-HMAC-SHA256-TRAILER"

    private let key: SymmetricKey
    private let amzDate: String
    private let scope: String
    /// The last signature verified: the seed (the request's) at first.
    private(set) var previous: String

    init(key: SymmetricKey, amzDate: String, scope: SignatureV4.Scope, seedSignature: String) {
        self.key = key
        self.amzDate = amzDate
        self.scope = scope.string
        previous = seedSignature.lowercased()
    }

    /// The signature the chunk whose data has `dataHash` must carry next.
    func expectedChunkSignature(dataHash: String) -> String {
        let toSign = [Self.chunkAlgorithm, amzDate, scope, previous, SignatureV4.emptyPayloadHash, dataHash].joined(separator: "\n")
        return SignatureV4.signature(stringToSign: toSign, key: key)
    }

    /// The signature the trailer lines (`name:value\n` each) must carry.
    func expectedTrailerSignature(trailerBytes: [UInt8]) -> String {
        let toSign = [Self.trailerAlgorithm, amzDate, scope, previous, SignatureV4.hex(SHA256.hash(data: trailerBytes))]
            .joined(separator: "\n")
        return SignatureV4.signature(stringToSign: toSign, key: key)
    }

    /// Checks the next chunk's signature and moves the chain on to it.
    mutating func verifyChunk(dataHash: String, signature: String) throws(S3Error) {
        let expected = expectedChunkSignature(dataHash: dataHash)
        guard ConstantTime.equals(signature.lowercased().utf8, Array(expected.utf8)) else { throw S3Error.signatureDoesNotMatch }
        previous = expected
    }

    /// Checks the trailing headers' signature (after the last chunk).
    mutating func verifyTrailer(trailerBytes: [UInt8], signature: String) throws(S3Error) {
        let expected = expectedTrailerSignature(trailerBytes: trailerBytes)
        guard ConstantTime.equals(signature.lowercased().utf8, Array(expected.utf8)) else { throw S3Error.signatureDoesNotMatch }
        previous = expected
    }
}
