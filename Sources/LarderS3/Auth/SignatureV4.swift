import Crypto

/// AWS Signature Version 4, the arithmetic: the canonical request, the
/// string to sign, the signing key and the signature, each a step as AWS
/// documents it ("Signature Version 4 signing process"). No parsing of
/// requests here (`SigV4Authenticator` does that), so AWS's published
/// examples test each step alone. Digests and HMAC from swift-crypto.
package enum SignatureV4 {
    package static let algorithm = "AWS4-HMAC-SHA256"
    /// The hash of an empty payload (the one GET, HEAD and DELETE sign).
    package static let emptyPayloadHash = hex(SHA256.hash(data: [UInt8]()))

    /// One request as it was signed.
    package struct Request: Sendable {
        package var method: String
        /// The path as sent (percent-encoded or not).
        package var path: Substring
        /// The query as sent, without `?` (nil: none).
        package var query: Substring?
        /// Every header of the request, name as sent.
        package var headers: [(name: String, value: String)]
        /// The headers the client signed, lower-case (`SignedHeaders`).
        package var signedHeaders: [String]
        /// `x-amz-content-sha256`: a hex SHA-256, `UNSIGNED-PAYLOAD`, or a `STREAMING-…` word.
        package var payloadHash: String

        package init(method: String, path: Substring, query: Substring?, headers: [(name: String, value: String)],
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
    package struct Scope: Sendable, Equatable {
        package var date: String
        package var region: String
        package var service: String
        package init(date: String, region: String, service: String) {
            self.date = date
            self.region = region
            self.service = service
        }
        package var string: String { "\(date)/\(region)/\(service)/aws4_request" }
    }

    /// The canonical request: method, URI, query, headers, signed headers,
    /// payload hash, a line each. S3 URIs are encoded once, not normalised
    /// (no `.`/`..` removal, no `//` folding), unlike other services.
    package static func canonicalRequest(_ request: Request) -> String {
        // Built as bytes: the strings of each line joined cost as much as the hashing.
        var out: [UInt8] = []
        out.reserveCapacity(512)
        out += request.method.utf8
        out.append(0x0A)
        let uri = AWSURIEncoding.encodedBytes(AWSURIEncoding.decode(request.path.utf8), keepSlash: true)
        if uri.isEmpty { out.append(0x2F) } else { out += uri }
        out.append(0x0A)
        out += canonicalQuery(request.query).utf8
        out.append(0x0A)
        appendCanonicalHeaders(&out, request.headers, signed: request.signedHeaders)
        out.append(0x0A)  // the headers' block ends with a blank line
        for (i, name) in request.signedHeaders.enumerated() {
            if i > 0 { out.append(0x3B) }
            out += name.utf8
        }
        out.append(0x0A)
        out += request.payloadHash.utf8
        return String(decoding: out, as: UTF8.self)
    }

    /// Parameters encoded and sorted by name, then value; `X-Amz-Signature`
    /// left out (a presigned URL carries its signature there).
    static func canonicalQuery(_ query: Substring?) -> String {
        guard let query, !query.isEmpty else { return "" }
        var pairs: [(name: [UInt8], value: [UInt8])] = []
        S3Query.forEachPair(query) { name, value in
            let name = AWSURIEncoding.encodedBytes(AWSURIEncoding.decode(name), keepSlash: false)
            if name.elementsEqual("X-Amz-Signature".utf8) { return }
            let value = value.map { AWSURIEncoding.encodedBytes(AWSURIEncoding.decode($0), keepSlash: false) } ?? []
            pairs.append((name, value))
        }
        // Byte order (ASCII after encoding), as AWS sorts.
        pairs.sort { a, b in
            a.name != b.name ? a.name.lexicographicallyPrecedes(b.name) : a.value.lexicographicallyPrecedes(b.value)
        }
        var out: [UInt8] = []
        for (i, pair) in pairs.enumerated() {
            if i > 0 { out.append(0x26) }
            out += pair.name
            out.append(0x3D)
            out += pair.value
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `name:value\n` for each signed header: values of a repeated header
    /// joined with `,`, surrounding spaces trimmed and runs of spaces
    /// folded to one. Ends with the blank line AWS's format has.
    static func canonicalHeaders(_ headers: [(name: String, value: String)], signed: [String]) -> String {
        var out: [UInt8] = []
        appendCanonicalHeaders(&out, headers, signed: signed)
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendCanonicalHeaders(_ out: inout [UInt8], _ headers: [(name: String, value: String)], signed: [String]) {
        for name in signed {
            out += name.utf8
            out.append(0x3A)
            var first = true
            for header in headers where isLowerCased(header.name, as: name) {
                if !first { out.append(0x2C) }
                first = false
                appendFolded(&out, header.value)
            }
            out.append(0x0A)
        }
    }

    /// `name.lowercased() == lower` for the ASCII names headers have, without the lower-cased copy.
    private static func isLowerCased(_ name: String, as lower: String) -> Bool {
        guard name.utf8.count == lower.utf8.count else { return false }
        for (a, b) in zip(name.utf8, lower.utf8) where a != b {
            guard (0x41...0x5A).contains(a), a | 0x20 == b else {
                return a >= 0x80 ? name.lowercased() == lower : false
            }
        }
        return true
    }

    /// `value` with surrounding spaces and tabs trimmed and each run of them one space.
    private static func appendFolded(_ out: inout [UInt8], _ value: String) {
        var pendingSpace = false
        var started = false
        for b in value.utf8 {
            if b == 0x20 || b == 0x09 {
                pendingSpace = started
            } else {
                if pendingSpace { out.append(0x20) }
                pendingSpace = false
                started = true
                out.append(b)
            }
        }
    }

    package static func stringToSign(canonicalRequest: String, amzDate: String, scope: Scope) -> String {
        algorithm + "\n" + amzDate + "\n" + scope.string + "\n" + hex(SHA256.hash(data: Array(canonicalRequest.utf8)))
    }

    /// HMAC chain: `AWS4`+secret, then date, region, service, `aws4_request`.
    package static func signingKey(secret: String, scope: Scope) -> SymmetricKey {
        var key = SymmetricKey(data: Array(("AWS4" + secret).utf8))
        for part in [scope.date, scope.region, scope.service, "aws4_request"] {
            key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key))
        }
        return key
    }

    package static func signature(stringToSign: String, key: SymmetricKey) -> String {
        hex(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key))
    }

    /// The hex signature of `request` with `secret` in `scope` at `amzDate`.
    package static func sign(_ request: Request, secret: String, amzDate: String, scope: Scope) -> String {
        let toSign = stringToSign(canonicalRequest: canonicalRequest(request), amzDate: amzDate, scope: scope)
        return signature(stringToSign: toSign, key: signingKey(secret: secret, scope: scope))
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        @inline(__always) func digit(_ n: UInt8) -> UInt8 { n < 10 ? 0x30 + n : 0x57 + n }
        var out: [UInt8] = []
        out.reserveCapacity(2 * digest.underestimatedCount)
        for b in digest {
            out.append(digit(b >> 4))
            out.append(digit(b & 0x0F))
        }
        return String(decoding: out, as: UTF8.self)
    }
}
