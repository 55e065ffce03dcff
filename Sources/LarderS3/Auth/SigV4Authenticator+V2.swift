import LarderHTTP
import LarderSupport

/// Signature Version 2 (`SignatureV2`), checked beside Version 4 by the
/// same authenticator: the same keys, the same clock skew, the same errors.
extension SigV4Authenticator {
    /// `Authorization: AWS <key>:<signature>`: the key known, `Date` (or
    /// `x-amz-date`) present, a date and near the server's clock, the
    /// signature the secret makes. The body is not signed.
    func verifyV2(_ head: HTTPRequestHead, header: String, nowSeconds: Int64, virtualHostBucket: String?) throws(S3Error) -> Verified {
        let credential = header.dropFirst(4)
        guard let colon = credential.lastIndex(of: ":") else {
            throw S3Error.invalidArgument("The Signature Version 2 Authorization header must be AWS <access key>:<signature>")
        }
        let accessKey = String(credential[..<colon]), signature = String(credential[credential.index(after: colon)...])
        guard let secret = credentials.secret(for: accessKey) else { throw S3Error.invalidAccessKeyId }
        let amzDate = head.headers["x-amz-date"], date = head.headers["Date"]
        guard let text = amzDate ?? date, !text.isEmpty else {
            throw S3Error.accessDenied("AWS authentication requires a valid Date or x-amz-date header")
        }
        // Before 1970 is no date S3 takes (not a skewed clock).
        guard let signedAt = Self.httpDateSeconds(text), signedAt >= 0 else {
            throw S3Error.accessDenied("AWS authentication requires a valid Date or x-amz-date header: '\(text)' is not an HTTP date")
        }
        if abs(nowSeconds - signedAt) > maxClockSkewSeconds { throw S3Error.requestTimeTooSkewed }
        try Self.check(signature, head, secret: secret, dateLine: amzDate != nil ? "" : text, virtualHostBucket: virtualHostBucket)
        return Verified(accessKey: accessKey, payload: .unsigned)
    }

    /// Whether the query is a Version 2 presigned URL's.
    static func isPresignedV2(_ query: S3Query) -> Bool {
        query.has("AWSAccessKeyId") && query.has("Signature") && query.has("Expires")
    }

    /// A Version 2 presigned URL: `Expires` (seconds since 1970) not past,
    /// signed in the place of the date.
    func verifyPresignedV2(_ head: HTTPRequestHead, _ query: S3Query, nowSeconds: Int64,
                           virtualHostBucket: String?) throws(S3Error) -> Verified {
        let accessKey = query["AWSAccessKeyId"] ?? "", expiresText = query["Expires"] ?? ""
        guard let secret = credentials.secret(for: accessKey) else { throw S3Error.invalidAccessKeyId }
        guard let expires = Int64(expiresText) else {
            throw S3Error.accessDenied("Expires must be a number of seconds since 1970, not '\(expiresText)'")
        }
        if nowSeconds > expires { throw S3Error.accessDenied("Request has expired") }
        try Self.check(query["Signature"] ?? "", head, secret: secret, dateLine: expiresText, virtualHostBucket: virtualHostBucket)
        return Verified(accessKey: accessKey, payload: .unsigned)
    }

    /// The signature the secret makes for the request, compared; a bare
    /// `/bucket` is also taken signed as `/bucket/` (botocore's way).
    private static func check(_ sent: String, _ head: HTTPRequestHead, secret: String, dateLine: String,
                              virtualHostBucket: String?) throws(S3Error) {
        let slashes = SignatureV2.isBareBucket(head, virtualHostBucket: virtualHostBucket) ? [false, true] : [false]
        for slash in slashes {
            let toSign = SignatureV2.stringToSign(head, dateLine: dateLine, virtualHostBucket: virtualHostBucket, bucketSlash: slash)
            if ConstantTime.equals(sent.utf8, Array(SignatureV2.signature(secret: secret, stringToSign: toSign).utf8)) { return }
        }
        throw S3Error.signatureDoesNotMatch
    }
}
