/// What `x-amz-content-sha256` says about the body.
enum PayloadHash: Equatable {
    /// The body's SHA-256 in hex: checked once the body is in.
    case sha256(String)
    /// `UNSIGNED-PAYLOAD`: the body is taken as sent.
    case unsigned
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: an `aws-chunked` body, chunks
    /// unsigned, trailing checksums after the last one.
    case streamingUnsignedTrailer

    /// nil for a value the face does not take (yet): the signed-chunk
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` forms among them.
    init?(header value: String) {
        if value == "UNSIGNED-PAYLOAD" {
            self = .unsigned
        } else if value == "STREAMING-UNSIGNED-PAYLOAD-TRAILER" {
            self = .streamingUnsignedTrailer
        } else if value.utf8.count == 64, value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) {
            self = .sha256(value)
        } else {
            return nil
        }
    }
}
