import LarderHTTP

/// The SigV4 parameters of a presigned URL (query-string authentication):
/// `X-Amz-Algorithm=AWS4-HMAC-SHA256`, `X-Amz-Credential`, `X-Amz-Date`,
/// `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Signature`, and the
/// optional `X-Amz-Content-Sha256`. A parameter missing or malformed is
/// `400 AuthorizationQueryParametersError`, with S3's messages; an
/// `X-Amz-Expires` out of its range (1 s to a week) is that error with
/// `403`, as an expired URL is refused (what Ceph's s3-tests hold S3 to).
struct PresignedQuery: Equatable {
    let accessKey: String
    let scope: SignatureV4.Scope
    let amzDate: String
    /// `X-Amz-Date` as seconds since 1970.
    let signedAt: Int64
    /// How long the URL is good for after `signedAt`, 1 s to 7 days.
    let expiresSeconds: Int64
    let signedHeaders: [String]
    let signature: String
    /// What the signature says of the body: `X-Amz-Content-Sha256`, else `UNSIGNED-PAYLOAD`.
    let payloadHash: String

    /// S3's longest validity: a week.
    static let maxExpiresSeconds: Int64 = 604_800

    /// Whether the request is signed in its query rather than an `Authorization` header.
    static func isPresigned(_ query: S3Query) -> Bool {
        query.has("X-Amz-Algorithm") || query.has("X-Amz-Signature") || query.has("X-Amz-Credential")
    }

    init(_ query: S3Query) throws(S3Error) {
        guard let algorithm = query["X-Amz-Algorithm"], let credential = query["X-Amz-Credential"],
              let signature = query["X-Amz-Signature"], let date = query["X-Amz-Date"],
              let signed = query["X-Amz-SignedHeaders"], let expires = query["X-Amz-Expires"] else {
            throw Self.error("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, "
                + "X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
        }
        guard algorithm == SignatureV4.algorithm else {
            throw Self.error("X-Amz-Algorithm only supports \"\(SignatureV4.algorithm)\"")
        }
        (accessKey, scope) = try SigV4Authenticator.credential(credential, malformed: { Self.error($0) })
        guard let signedAt = SigV4Authenticator.seconds(amzDate: date) else {
            throw Self.error("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
        }
        guard date.hasPrefix(scope.date) else {
            throw Self.error("Error parsing the X-Amz-Credential parameter; the date \(scope.date) is not the day of X-Amz-Date \(date)")
        }
        guard let seconds = Int64(expires) else { throw Self.error("X-Amz-Expires should be a number") }
        guard seconds >= 0 else { throw Self.error("X-Amz-Expires must be non-negative", .forbidden) }
        guard seconds >= 1 else { throw Self.error("X-Amz-Expires must be at least 1 (second)", .forbidden) }
        guard seconds <= Self.maxExpiresSeconds else {
            throw Self.error("X-Amz-Expires must be less than a week (in seconds) that is; \(Self.maxExpiresSeconds)", .forbidden)
        }
        amzDate = date
        self.signedAt = signedAt
        expiresSeconds = seconds
        signedHeaders = SigV4Authenticator.signedHeaders(signed)
        self.signature = signature
        payloadHash = query["X-Amz-Content-Sha256"] ?? "UNSIGNED-PAYLOAD"
    }

    static func error(_ message: String, _ status: HTTPStatus = .badRequest) -> S3Error {
        S3Error(status, "AuthorizationQueryParametersError", message)
    }
}
