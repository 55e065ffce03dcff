import Crypto
import FoundationEssentials
import LarderHTTP
import LarderModel
import LarderSupport

/// Checks a request's SigV4 signature against the configured keys: in an
/// `Authorization: AWS4-HMAC-SHA256 …` header, or in the query of a
/// presigned URL (`X-Amz-Signature`, `PresignedQuery`); and a Version 2
/// one (`SigV4Authenticator+V2`). The key is known,
/// the date near the server's clock (and a presigned URL not expired), and
/// the signature the one its secret makes for this request. What it cannot
/// check before the body (the payload's hash, a signed chunked body's chain
/// of chunk signatures) it hands back for the body's reader.
struct SigV4Authenticator: Sendable {
    let credentials: S3Credentials
    let maxClockSkewSeconds: Int64
    /// Signing keys by secret and scope: a client signs all day in one
    /// scope, so the four HMACs that make its key are done once a day.
    let signingKeys = SigningKeyCache()

    /// Who signed, and what the body must match.
    struct Verified {
        let accessKey: String
        let payload: PayloadHash
        /// For a signed aws-chunked body (`STREAMING-AWS4-HMAC-SHA256-…`):
        /// the chain its chunks' signatures continue, seeded with this
        /// request's signature. nil otherwise.
        var chunkSignatures: ChunkSignatureChain? = nil
    }

    /// The parts of an `Authorization` header.
    struct Authorization: Equatable {
        let accessKey: String
        let scope: SignatureV4.Scope
        let signedHeaders: [String]
        let signature: String
    }

    func verify(_ head: HTTPRequestHead, nowSeconds: Int64) throws(S3Error) -> Verified {
        try verify(head, query: S3Query(head.query), nowSeconds: nowSeconds)
    }

    /// `query`: the request's, parsed (`S3Query(head.query)`);
    /// `virtualHostBucket`: the bucket a `<bucket>.localhost` Host names
    /// (Version 2 signs it in front of the path).
    func verify(_ head: HTTPRequestHead, query: S3Query, nowSeconds: Int64,
                virtualHostBucket: String? = nil) throws(S3Error) -> Verified {
        guard !credentials.keys.isEmpty else {
            throw S3Error(.forbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records: "
                          + "this server requires a token and has no S3 access keys (give --s3-credentials, or "
                          + "LARDER_S3_ACCESS_KEY and LARDER_S3_SECRET_KEY)")
        }
        let presigned = head.query != nil && PresignedQuery.isPresigned(query)
        guard let header = head.headers["Authorization"] else {
            if presigned { return try verifyPresigned(head, query, nowSeconds: nowSeconds) }
            if head.query != nil && Self.isPresignedV2(query) {
                return try verifyPresignedV2(head, query, nowSeconds: nowSeconds, virtualHostBucket: virtualHostBucket)
            }
            throw S3Error.accessDenied("Access Denied: the request is not signed (no Authorization header, "
                + "no X-Amz-Signature or Signature in the query)")
        }
        if header.hasPrefix("AWS ") {
            return try verifyV2(head, header: header, nowSeconds: nowSeconds, virtualHostBucket: virtualHostBucket)
        }
        if presigned {
            throw S3Error.invalidArgument("Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, "
                + "Signature query string parameter or the Authorization header should be specified")
        }
        let auth = try Self.parse(header)
        guard let secret = credentials.secret(for: auth.accessKey) else { throw S3Error.invalidAccessKeyId }
        // Without x-amz-date the Date header is the signing time (botocore
        // signs so when a request carries a Date of its own).
        guard let amzDate = head.headers["x-amz-date"] ?? head.headers["Date"].flatMap(Self.httpDateSeconds).map(Self.amzDate) else {
            throw S3Error.accessDenied("AWS authentication requires a valid Date or x-amz-date header")
        }
        guard let signedAt = Self.seconds(amzDate: amzDate) else {
            throw S3Error.accessDenied("x-amz-date '\(amzDate)' is not a date of the form 20130524T000000Z")
        }
        guard amzDate.hasPrefix(auth.scope.date) else {
            throw S3Error.authorizationHeaderMalformed("the credential's date \(auth.scope.date) is not the day of x-amz-date \(amzDate)")
        }
        if abs(nowSeconds - signedAt) > maxClockSkewSeconds { throw S3Error.requestTimeTooSkewed }
        guard let hashText = head.headers["x-amz-content-sha256"] else {
            throw S3Error.invalidRequest("Missing required header for this request: x-amz-content-sha256")
        }
        let payload = try Self.payload(hashText)
        return try check(head, accessKey: auth.accessKey, secret: secret, amzDate: amzDate, scope: auth.scope,
                         signedHeaders: auth.signedHeaders, payloadHash: hashText, payload: payload, signature: auth.signature)
    }

    /// A presigned URL: its parameters, its time window, its signature.
    private func verifyPresigned(_ head: HTTPRequestHead, _ parsed: S3Query, nowSeconds: Int64) throws(S3Error) -> Verified {
        let query = try PresignedQuery(parsed)
        guard let secret = credentials.secret(for: query.accessKey) else { throw S3Error.invalidAccessKeyId }
        // Signed in the future (beyond the skew S3 allows): the signer's clock is off.
        if query.signedAt - nowSeconds > maxClockSkewSeconds { throw S3Error.requestTimeTooSkewed }
        if nowSeconds > query.signedAt + query.expiresSeconds {
            throw S3Error(.forbidden, "AccessDenied", "Request has expired", details: [
                ("X-Amz-Expires", String(query.expiresSeconds)),
                ("Expires", S3Time.iso8601(nanos: (query.signedAt + query.expiresSeconds) * 1_000_000_000)),
                ("ServerTime", S3Time.iso8601(nanos: nowSeconds * 1_000_000_000)),
            ])
        }
        let payload = try Self.payload(query.payloadHash)
        return try check(head, accessKey: query.accessKey, secret: secret, amzDate: query.amzDate, scope: query.scope,
                         signedHeaders: query.signedHeaders, payloadHash: query.payloadHash, payload: payload,
                         signature: query.signature)
    }

    /// What a payload hash value means; refused when the face does not take it.
    private static func payload(_ hashText: String) throws(S3Error) -> PayloadHash {
        guard let payload = PayloadHash(header: hashText) else {
            if hashText.hasPrefix("STREAMING-") {
                throw S3Error.notImplemented(
                    "x-amz-content-sha256 \(hashText) is not supported; send UNSIGNED-PAYLOAD, the body's SHA-256, "
                        + "STREAMING-UNSIGNED-PAYLOAD-TRAILER or STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]")
            }
            throw S3Error.invalidArgument("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING- value or a hex SHA-256")
        }
        return payload
    }

    /// The signature check both forms share: the canonical request rebuilt
    /// from what arrived, signed with the key's secret, compared.
    private func check(_ head: HTTPRequestHead, accessKey: String, secret: String, amzDate: String, scope: SignatureV4.Scope,
                       signedHeaders: [String], payloadHash: String, payload: PayloadHash,
                       signature: String) throws(S3Error) -> Verified {
        let request = SignatureV4.Request(method: head.method.description, path: head.path, query: head.query,
                                          headers: head.headers.map { (name: $0.name, value: $0.value) },
                                          signedHeaders: signedHeaders, payloadHash: payloadHash)
        let signing = signingKeys.signing(secret: secret, scope: scope)
        let toSign = SignatureV4.stringToSign(canonicalRequest: SignatureV4.canonicalRequest(request), amzDate: amzDate, scope: scope)
        let expected = signing.signature(stringToSign: toSign)
        let key = signing.key
        guard ConstantTime.equals(signature.utf8, Array(expected.utf8)) else { throw S3Error.signatureDoesNotMatch }
        var verified = Verified(accessKey: accessKey, payload: payload)
        if payload.hasSignedChunks {
            verified.chunkSignatures = ChunkSignatureChain(key: key, amzDate: amzDate, scope: scope, seedSignature: expected)
        }
        return verified
    }

    /// `AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,
    /// SignedHeaders=host;x-amz-date, Signature=hex`.
    static func parse(_ header: String) throws(S3Error) -> Authorization {
        let algorithm = SignatureV4.algorithm + " "
        guard header.hasPrefix(algorithm) else {
            throw S3Error.authorizationHeaderMalformed("the Authorization header does not start with \(SignatureV4.algorithm)")
        }
        // By bytes (what matters of the header is ASCII), three fields
        // looked for by name: Foundation's trimming and a dictionary cost
        // more than the signature's arithmetic.
        var credential: String?, signed: String?, signature: String?
        let bytes = Array(header.utf8)
        var start = algorithm.utf8.count
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x2C { end += 1 }
            var (from, to) = (start, end)
            while from < to && (bytes[from] == 0x20 || bytes[from] == 0x09) { from += 1 }
            while to > from && (bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09) { to -= 1 }
            var eq = from
            while eq < to && bytes[eq] != 0x3D { eq += 1 }
            if eq < to {
                // The last of a name given twice counts, as before.
                let value = String(decoding: bytes[(eq + 1)..<to], as: UTF8.self)
                switch bytes[from..<eq] {
                case let name where name.elementsEqual("Credential".utf8): credential = value
                case let name where name.elementsEqual("SignedHeaders".utf8): signed = value
                case let name where name.elementsEqual("Signature".utf8): signature = value
                default: break
                }
            }
            start = end + 1
        }
        guard let credential, let signed, let signature, !signed.isEmpty, !signature.isEmpty else {
            throw S3Error.authorizationHeaderMalformed("the Authorization header needs Credential, SignedHeaders and Signature")
        }
        let (accessKey, scope) = try Self.credential(credential, malformed: S3Error.authorizationHeaderMalformed)
        return Authorization(accessKey: accessKey, scope: scope, signedHeaders: Self.signedHeaders(signed), signature: signature)
    }

    /// `host;x-amz-date` as lower-case names (a name given in upper case lower-cased; empty ones skipped).
    static func signedHeaders(_ text: String) -> [String] {
        text.utf8.split(separator: 0x3B).map { name in
            name.contains(where: { (0x41...0x5A).contains($0) || $0 >= 0x80 }) ? String(Substring(name)).lowercased()
                                                                             : String(Substring(name))
        }
    }

    /// `ACCESS_KEY/DATE/REGION/s3/aws4_request`: the access key and the
    /// scope. Any region is taken (the signature is checked in the region
    /// the client signed for); the service must be `s3`. `malformed` makes
    /// the error (the header's and the query's differ).
    static func credential(_ text: String, malformed: (String) -> S3Error) throws(S3Error) -> (String, SignatureV4.Scope) {
        // The access key may hold no `/`; the scope is the last four parts.
        let parts = text.utf8.split(separator: 0x2F, omittingEmptySubsequences: false).map { String(Substring($0)) }
        guard parts.count == 5, !parts[0].isEmpty, !parts[2].isEmpty, parts[1].utf8.count == 8,
              parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw malformed("the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
        }
        guard parts[3] == "s3" else {
            throw malformed("the Credential's service is '\(parts[3])'; this endpoint is s3")
        }
        guard parts[4] == "aws4_request" else {
            throw malformed("the Credential's terminal is '\(parts[4])'; this endpoint uses aws4_request")
        }
        return (parts[0], SignatureV4.Scope(date: parts[1], region: parts[2], service: parts[3]))
    }

    /// A `Date` header as S3 reads it: an HTTP-date, or the same with a
    /// numeric zone of UTC (`+0000`, `-0000`, as RFC 2822 mailers and
    /// Python's `formatdate` write it).
    static func httpDateSeconds(_ text: String) -> Int64? {
        if let seconds = HTTPDate.parse(text) { return seconds }
        guard text.hasSuffix(" +0000") || text.hasSuffix(" -0000") else { return nil }
        return HTTPDate.parse(String(text.dropLast(5)) + "GMT")
    }

    /// Seconds since 1970 as `20130524T000000Z`.
    static func amzDate(_ seconds: Int64) -> String {
        String(ISO8601.format(nanos: seconds * 1_000_000_000).filter { $0 != "-" && $0 != ":" })
    }

    /// `20130524T000000Z` as seconds since 1970; nil when it is not one.
    static func seconds(amzDate text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 16, b[8] == 0x54, b[15] == 0x5A else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var n: Int64 = 0
            for i in range {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                n = n * 10 + Int64(b[i] - 0x30)
            }
            return n
        }
        guard let y = number(0..<4), let m = number(4..<6), let d = number(6..<8),
              let hh = number(9..<11), let mm = number(11..<13), let ss = number(13..<15),
              (1...12).contains(m), (1...31).contains(d), hh < 24, mm < 60, ss < 61 else { return nil }
        return CivilCalendar.daysFromCivil(year: y, month: m, day: d) * 86_400 + hh * 3600 + mm * 60 + ss
    }
}

/// Signing keys by secret and scope (`SignatureV4.signingKey`), made once
/// each, with an HMAC already keyed with each (copied per request: keying
/// one hashes a block). Emptied when it holds many (a new day's scope, many
/// keys), so it stays small.
final class SigningKeyCache: Sendable {
    struct Signing {
        let key: SymmetricKey
        /// `HMAC(key:)`, not yet fed: each use works on its own copy.
        let keyed: HMAC<SHA256>

        /// `SignatureV4.signature(stringToSign:key:)`, from the keyed HMAC.
        func signature(stringToSign: String) -> String {
            var mac = keyed
            mac.update(data: Array(stringToSign.utf8))
            return SignatureV4.hex(mac.finalize())
        }
    }

    private let entries = Locked<[String: Signing]>([:])
    static let limit = 256

    func key(secret: String, scope: SignatureV4.Scope) -> SymmetricKey { signing(secret: secret, scope: scope).key }

    func signing(secret: String, scope: SignatureV4.Scope) -> Signing {
        let name = scope.date + "\n" + scope.region + "\n" + scope.service + "\n" + secret
        if let signing = entries.withLock({ $0[name] }) { return signing }
        let key = SignatureV4.signingKey(secret: secret, scope: scope)
        let signing = Signing(key: key, keyed: HMAC<SHA256>(key: key))
        entries.withLock { entries in
            if entries.count >= Self.limit { entries.removeAll() }
            entries[name] = signing
        }
        return signing
    }
}
