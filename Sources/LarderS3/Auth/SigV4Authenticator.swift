import Foundation
import LarderHTTP

/// Checks a request's `Authorization: AWS4-HMAC-SHA256 …` header against
/// the configured keys: the key is known, the date is near the server's
/// clock, and the signature is the one its secret makes for this request.
/// What it cannot check before the body (the payload's hash) it hands back
/// as a `PayloadHash` for the body's reader.
struct SigV4Authenticator: Sendable {
    let credentials: S3Credentials
    let maxClockSkewSeconds: Int64

    /// Who signed, and what the body must match.
    struct Verified {
        let accessKey: String
        let payload: PayloadHash
    }

    /// The parts of an `Authorization` header.
    struct Authorization: Equatable {
        let accessKey: String
        let scope: SignatureV4.Scope
        let signedHeaders: [String]
        let signature: String
    }

    func verify(_ head: HTTPRequestHead, nowSeconds: Int64) throws(S3Error) -> Verified {
        guard let header = head.headers["Authorization"] else {
            if head.query.map({ $0.contains("X-Amz-Signature=") }) == true {
                throw S3Error.notImplemented("presigned URLs are not supported yet; sign requests with the Authorization header")
            }
            throw S3Error.accessDenied("Access Denied: the request is not signed (no Authorization header)")
        }
        let auth = try Self.parse(header)
        guard let secret = credentials.secret(for: auth.accessKey) else { throw S3Error.invalidAccessKeyId }
        guard let amzDate = head.headers["x-amz-date"] else {
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
        guard let payload = PayloadHash(header: hashText) else {
            if hashText.hasPrefix("STREAMING-") {
                throw S3Error.notImplemented(
                    "x-amz-content-sha256 \(hashText) (signed aws-chunked uploads) is not supported yet; "
                        + "send UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER or the body's SHA-256")
            }
            throw S3Error.invalidArgument("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING- value or a hex SHA-256")
        }
        let request = SignatureV4.Request(method: head.method.description, path: head.path, query: head.query,
                                          headers: head.headers.map { (name: $0.name, value: $0.value) },
                                          signedHeaders: auth.signedHeaders, payloadHash: hashText)
        let expected = SignatureV4.sign(request, secret: secret, amzDate: amzDate, scope: auth.scope)
        guard Self.constantTimeEqual(expected, auth.signature) else { throw S3Error.signatureDoesNotMatch }
        return Verified(accessKey: auth.accessKey, payload: payload)
    }

    /// `AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,
    /// SignedHeaders=host;x-amz-date, Signature=hex`.
    static func parse(_ header: String) throws(S3Error) -> Authorization {
        let algorithm = SignatureV4.algorithm + " "
        guard header.hasPrefix(algorithm) else {
            if header.hasPrefix("AWS ") {
                throw S3Error.invalidRequest("Signature Version 2 is not supported; sign with AWS4-HMAC-SHA256")
            }
            throw S3Error.authorizationHeaderMalformed("the Authorization header does not start with \(SignatureV4.algorithm)")
        }
        var fields: [String: String] = [:]
        for part in header.dropFirst(algorithm.count).split(separator: ",") {
            let item = part.trimmingCharacters(in: .whitespaces)
            guard let eq = item.firstIndex(of: "=") else { continue }
            fields[String(item[..<eq])] = String(item[item.index(after: eq)...])
        }
        guard let credential = fields["Credential"], let signed = fields["SignedHeaders"], let signature = fields["Signature"] else {
            throw S3Error.authorizationHeaderMalformed("the Authorization header needs Credential, SignedHeaders and Signature")
        }
        // The access key may hold no `/`; the scope is the last four parts.
        let parts = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, parts[4] == "aws4_request", !parts[0].isEmpty else {
            throw S3Error.authorizationHeaderMalformed("the Credential must be ACCESS_KEY/DATE/REGION/SERVICE/aws4_request")
        }
        guard parts[3] == "s3" else {
            throw S3Error.authorizationHeaderMalformed("the Credential's service is '\(parts[3])'; this endpoint is s3")
        }
        return Authorization(accessKey: parts[0], scope: SignatureV4.Scope(date: parts[1], region: parts[2], service: parts[3]),
                             signedHeaders: signed.split(separator: ";").map { $0.lowercased() }, signature: signature)
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
        return daysFromCivil(y, m, d) * 86_400 + hh * 3600 + mm * 60 + ss
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Compares every byte, so the time taken says nothing of where a
    /// guessed signature first differs.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
