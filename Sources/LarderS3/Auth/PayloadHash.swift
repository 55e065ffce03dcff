/// What `x-amz-content-sha256` (or a presigned URL's `X-Amz-Content-Sha256`)
/// says about the body.
enum PayloadHash: Equatable {
    /// The body's SHA-256 in hex: checked once the body is in.
    case sha256(String)
    /// `UNSIGNED-PAYLOAD`: the body is taken as sent.
    case unsigned
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: an `aws-chunked` body, chunks
    /// unsigned, trailing checksums after the last one.
    case streamingUnsignedTrailer
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: an `aws-chunked` body, each
    /// chunk signed, the chain seeded with the request's signature.
    case streamingSigned
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: the same, then trailing
    /// headers signed by `x-amz-trailer-signature`.
    case streamingSignedTrailer

    static let streamingSignedValue = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    static let streamingSignedTrailerValue = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"

    /// nil for a value the face does not take: the ECDSA (SigV4a)
    /// `STREAMING-AWS4-ECDSA-P256-SHA256-…` forms among them.
    init?(header value: String) {
        switch value {
        case "UNSIGNED-PAYLOAD": self = .unsigned
        case "STREAMING-UNSIGNED-PAYLOAD-TRAILER": self = .streamingUnsignedTrailer
        case Self.streamingSignedValue: self = .streamingSigned
        case Self.streamingSignedTrailerValue: self = .streamingSignedTrailer
        default:
            guard value.utf8.count == 64, value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
                return nil
            }
            self = .sha256(value)
        }
    }

    /// The body is `aws-chunked` framing, whatever `Content-Encoding` says.
    var isAWSChunked: Bool {
        switch self {
        case .streamingUnsignedTrailer, .streamingSigned, .streamingSignedTrailer: true
        case .sha256, .unsigned: false
        }
    }

    /// Each chunk carries a `chunk-signature` to verify.
    var hasSignedChunks: Bool { self == .streamingSigned || self == .streamingSignedTrailer }
}
