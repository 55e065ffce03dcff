import LarderSupport

/// Who signed a browser upload's form: its policy field signed with an
/// access key's secret, by Signature Version 4 (`x-amz-algorithm`,
/// `x-amz-credential`, `x-amz-date`, `x-amz-signature`: the hex HMAC of
/// the policy under the scope's signing key) or Version 2 (`AWSAccessKeyId`,
/// `signature`: the base64 HMAC-SHA1 of the policy under the secret). A
/// form with neither is anonymous, which Larder refuses as it refuses every
/// unsigned request.
enum PostFormSignature {
    /// The access key that signed `fields` (names lower-cased), checked.
    static func verify(_ fields: [String: String], credentials: S3Credentials) throws(S3Error) -> String {
        let policy = fields["policy"]
        if let algorithm = fields["x-amz-algorithm"] {
            guard algorithm == SignatureV4.algorithm else {
                throw S3Error.invalidArgument("POST form: x-amz-algorithm must be \(SignatureV4.algorithm), not \(algorithm)")
            }
            guard let policy else { throw missing("policy") }
            guard let signature = fields["x-amz-signature"] else { throw missing("x-amz-signature") }
            guard let credential = fields["x-amz-credential"] else { throw missing("x-amz-credential") }
            guard fields["x-amz-date"] != nil else { throw missing("x-amz-date") }
            let (accessKey, scope) = try SigV4Authenticator.credential(credential) { S3Error.invalidArgument("POST form: " + $0) }
            guard let secret = credentials.secret(for: accessKey) else { throw S3Error.invalidAccessKeyId }
            let expected = SignatureV4.signature(stringToSign: policy, key: SignatureV4.signingKey(secret: secret, scope: scope))
            guard ConstantTime.equals(signature.lowercased().utf8, Array(expected.utf8)) else { throw S3Error.signatureDoesNotMatch }
            return accessKey
        }
        if let accessKey = fields["awsaccesskeyid"] {
            guard let policy else { throw missing("policy") }
            guard let signature = fields["signature"] else { throw missing("signature") }
            guard let secret = credentials.secret(for: accessKey) else { throw S3Error.invalidAccessKeyId }
            let expected = SignatureV2.signature(secret: secret, stringToSign: policy)
            guard ConstantTime.equals(signature.utf8, Array(expected.utf8)) else { throw S3Error.signatureDoesNotMatch }
            return accessKey
        }
        if policy != nil { throw missing("AWSAccessKeyId") }
        throw S3Error.accessDenied(
            "Access Denied: the POST form is not signed (no policy, x-amz-signature or signature field); Larder takes no anonymous uploads")
    }

    private static func missing(_ field: String) -> S3Error {
        .invalidArgument("Bucket POST must contain a field named '\(field)'. If it is specified, please check the order of the fields.")
    }
}
