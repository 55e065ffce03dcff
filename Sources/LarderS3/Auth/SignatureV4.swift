import Crypto

/// AWS Signature Version 4, the arithmetic: the canonical request, the
/// string to sign, the signing key and the signature, each a step as AWS
/// documents it ("Signature Version 4 signing process"). No parsing of
/// requests here (`SigV4Authenticator` does that), so AWS's published
/// examples test each step alone. Digests and HMAC from swift-crypto.
public enum SignatureV4 {
    public static let algorithm = "AWS4-HMAC-SHA256"
    /// The hash of an empty payload (the one GET, HEAD and DELETE sign).
    public static let emptyPayloadHash = hex(SHA256.hash(data: [UInt8]()))

    /// One request as it was signed.
    public struct Request: Sendable {
        public var method: String
        /// The path as sent (percent-encoded or not).
        public var path: Substring
        /// The query as sent, without `?` (nil: none).
        public var query: Substring?
        /// Every header of the request, name as sent.
        public var headers: [(name: String, value: String)]
        /// The headers the client signed, lower-case (`SignedHeaders`).
        public var signedHeaders: [String]
        /// `x-amz-content-sha256`: a hex SHA-256, `UNSIGNED-PAYLOAD`, or a `STREAMING-…` word.
        public var payloadHash: String

        public init(method: String, path: Substring, query: Substring?, headers: [(name: String, value: String)],
                    signedHeaders: [String], payloadHash: String) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.signedHeaders = signedHeaders
            self.payloadHash = payloadHash
        }
    }

    /// Where a signature applies: `20130524/us-east-1/s3/aws4_request`.
    public struct Scope: Sendable, Equatable {
        public var date: String
        public var region: String
        public var service: String
        public init(date: String, region: String, service: String) {
            self.date = date
            self.region = region
            self.service = service
        }
        public var string: String { "\(date)/\(region)/\(service)/aws4_request" }
    }

    /// The canonical request: method, URI, query, headers, signed headers,
    /// payload hash, a line each. S3 URIs are encoded once, not normalised
    /// (no `.`/`..` removal, no `//` folding), unlike other services.
    public static func canonicalRequest(_ request: Request) -> String {
        let uri = AWSURIEncoding.encode(AWSURIEncoding.decode(request.path), keepSlash: true)
        return [
            request.method,
            uri.isEmpty ? "/" : uri,
            canonicalQuery(request.query),
            canonicalHeaders(request.headers, signed: request.signedHeaders),
            request.signedHeaders.joined(separator: ";"),
            request.payloadHash,
        ].joined(separator: "\n")
    }

    /// Parameters encoded and sorted by name, then value; `X-Amz-Signature`
    /// left out (a presigned URL carries its signature there).
    static func canonicalQuery(_ query: Substring?) -> String {
        guard let query, !query.isEmpty else { return "" }
        var pairs: [(String, String)] = []
        for item in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = AWSURIEncoding.encode(AWSURIEncoding.decode(parts[0]), keepSlash: false)
            if name == "X-Amz-Signature" { continue }
            let value = parts.count > 1 ? AWSURIEncoding.encode(AWSURIEncoding.decode(parts[1]), keepSlash: false) : ""
            pairs.append((name, value))
        }
        // Byte order (ASCII after encoding), as AWS sorts.
        pairs.sort { a, b in
            a.0 != b.0 ? Array(a.0.utf8).lexicographicallyPrecedes(Array(b.0.utf8))
                       : Array(a.1.utf8).lexicographicallyPrecedes(Array(b.1.utf8))
        }
        return pairs.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// `name:value\n` for each signed header: values of a repeated header
    /// joined with `,`, surrounding spaces trimmed and runs of spaces
    /// folded to one. Ends with the blank line AWS's format has.
    static func canonicalHeaders(_ headers: [(name: String, value: String)], signed: [String]) -> String {
        var out = ""
        for name in signed {
            let values = headers.filter { $0.name.lowercased() == name }.map { foldSpaces($0.value) }
            out += name + ":" + values.joined(separator: ",") + "\n"
        }
        return out
    }

    private static func foldSpaces(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    public static func stringToSign(canonicalRequest: String, amzDate: String, scope: Scope) -> String {
        [algorithm, amzDate, scope.string, hex(SHA256.hash(data: Array(canonicalRequest.utf8)))].joined(separator: "\n")
    }

    /// HMAC chain: `AWS4`+secret, then date, region, service, `aws4_request`.
    public static func signingKey(secret: String, scope: Scope) -> SymmetricKey {
        var key = SymmetricKey(data: Array(("AWS4" + secret).utf8))
        for part in [scope.date, scope.region, scope.service, "aws4_request"] {
            key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key))
        }
        return key
    }

    public static func signature(stringToSign: String, key: SymmetricKey) -> String {
        hex(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key))
    }

    /// The hex signature of `request` with `secret` in `scope` at `amzDate`.
    public static func sign(_ request: Request, secret: String, amzDate: String, scope: Scope) -> String {
        let toSign = stringToSign(canonicalRequest: canonicalRequest(request), amzDate: amzDate, scope: scope)
        return signature(stringToSign: toSign, key: signingKey(secret: secret, scope: scope))
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in digest {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
