import LarderHTTP
@testable import LarderS3
import LarderTestSupport
import Testing

/// Query-string SigV4 (presigned URLs): AWS's published example ("GET
/// /test.txt", in "Authenticating Requests: Using Query Parameters") signed
/// by the canonical-request code, then the authenticator's checks of its
/// parameters and of its time window, on a parsed request head.
@Suite(.blockingLane) struct PresignedURLTests {
    static let accessKey = "AKIAIOSFODNN7EXAMPLE"
    static let query = "X-Amz-Algorithm=AWS4-HMAC-SHA256"
        + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
    static let signature = "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
    static let host = "examplebucket.s3.amazonaws.com"
    /// 20130524T000000Z.
    static let signedAt: Int64 = 1_369_353_600

    static let authenticator = SigV4Authenticator(credentials: S3Credentials(keys: [accessKey: SignatureV4Tests.secret]),
                                                  maxClockSkewSeconds: 15 * 60)

    @Test func awsExampleSignsAsPublished() {
        let request = SignatureV4.Request(
            method: "GET", path: "/test.txt", query: Substring(Self.query + "&X-Amz-Signature=" + Self.signature),
            headers: [("Host", Self.host)], signedHeaders: ["host"], payloadHash: "UNSIGNED-PAYLOAD")
        // X-Amz-Signature is left out of what is signed.
        #expect(SignatureV4.canonicalRequest(request) == """
            GET
            /test.txt
            \(Self.query)
            host:examplebucket.s3.amazonaws.com

            host
            UNSIGNED-PAYLOAD
            """)
        #expect(SignatureV4.sign(request, secret: SignatureV4Tests.secret, amzDate: "20130524T000000Z", scope: SignatureV4Tests.scope)
            == Self.signature)
    }

    /// A request head as the server parses it.
    static func head(_ target: String, method: String = "GET", headers: [(String, String)] = []) throws -> HTTPRequestHead {
        var parser = HTTPRequestParser(configuration: HTTPServerConfiguration())
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        let bytes = Array((text + "\r\n").utf8)
        guard case .complete(let head, _) = bytes.withUnsafeBytes({ parser.parse($0) }) else {
            throw S3Error.invalidArgument("the test's request did not parse")
        }
        return head
    }

    /// The S3 error code `verify` throws (nil: verified).
    static func code(_ target: String, at now: Int64, method: String = "GET", headers: [(String, String)] = []) throws -> String? {
        let request = try Self.head(target, method: method, headers: headers)
        do {
            _ = try authenticator.verify(request, nowSeconds: now)
            return nil
        } catch {
            return error.code
        }
    }

    static let url = "/test.txt?\(query)&X-Amz-Signature=\(signature)"

    @Test func theExampleIsGoodForItsDayAndNoLonger() throws {
        let verified = try Self.authenticator.verify(try Self.head(Self.url), nowSeconds: Self.signedAt + 3600)
        #expect(verified.accessKey == Self.accessKey)
        #expect(verified.payload == .unsigned)
        #expect(verified.chunkSignatures == nil)
        #expect(try Self.code(Self.url, at: Self.signedAt + 86_400) == nil)
        #expect(try Self.code(Self.url, at: Self.signedAt + 86_401) == "AccessDenied")
        // Signed ahead of the server's clock: within the skew S3 allows, or not.
        #expect(try Self.code(Self.url, at: Self.signedAt - 899) == nil)
        #expect(try Self.code(Self.url, at: Self.signedAt - 901) == "RequestTimeTooSkewed")
    }

    @Test func anythingChangedIsRefused() throws {
        let now = Self.signedAt + 60
        #expect(try Self.code(Self.url.replacingOccurrences(of: "/test.txt", with: "/test.TXT"), at: now) == "SignatureDoesNotMatch")
        #expect(try Self.code(Self.url, at: now, method: "DELETE") == "SignatureDoesNotMatch")
        #expect(try Self.code(Self.url + "&versionId=1", at: now) == "SignatureDoesNotMatch")
        #expect(try Self.code(Self.url.replacingOccurrences(of: "Expires=86400", with: "Expires=86401"), at: now) == "SignatureDoesNotMatch")
        #expect(try Self.code(Self.url.replacingOccurrences(of: "AKIAIOSFODNN7EXAMPLE", with: "AKIDOTHER"), at: now) == "InvalidAccessKeyId")
        // Unsigned headers may be added; a signed one may not change.
        #expect(try Self.code(Self.url, at: now, headers: [("Range", "bytes=0-9")]) == nil)
        // Both mechanisms at once: S3 refuses the request.
        #expect(try Self.code(Self.url, at: now, headers: [("Authorization", "AWS4-HMAC-SHA256 Credential=x")]) == "InvalidArgument")
    }

    @Test(arguments: [
        ("X-Amz-Expires=86400", "X-Amz-Expires=604801"),
        ("X-Amz-Expires=86400", "X-Amz-Expires=0"),
        ("X-Amz-Expires=86400", "X-Amz-Expires=soon"),
        ("X-Amz-Expires=86400&", ""),
        ("X-Amz-Date=20130524T000000Z", "X-Amz-Date=2013-05-24"),
        ("X-Amz-Date=20130524T000000Z", "X-Amz-Date=20130525T000000Z"),
        ("AWS4-HMAC-SHA256&", "AWS4-HMAC-SHA1&"),
        ("%2Fs3%2F", "%2Fec2%2F"),
        ("aws4_request", "aws4_requests"),
        ("%2Fus-east-1", ""),
    ])
    func malformedParametersAreRefused(_ replacing: String, _ with: String) throws {
        let target = Self.url.replacingOccurrences(of: replacing, with: with)
        #expect(target != Self.url)
        #expect(try Self.code(target, at: Self.signedAt + 60) == "AuthorizationQueryParametersError", "\(target)")
    }

    @Test func anyRegionIsTaken() throws {
        // Signed for another region: the signature is checked in that region.
        let query = Self.query.replacingOccurrences(of: "us-east-1", with: "eu-west-3")
        let request = SignatureV4.Request(method: "GET", path: "/test.txt", query: Substring(query), headers: [("Host", Self.host)],
                                          signedHeaders: ["host"], payloadHash: "UNSIGNED-PAYLOAD")
        let scope = SignatureV4.Scope(date: "20130524", region: "eu-west-3", service: "s3")
        let signature = SignatureV4.sign(request, secret: SignatureV4Tests.secret, amzDate: "20130524T000000Z", scope: scope)
        #expect(try Self.code("/test.txt?\(query)&X-Amz-Signature=\(signature)", at: Self.signedAt + 60) == nil)
    }

    @Test func aSignedPayloadHashIsTheBodysToMatch() throws {
        let hash = String(repeating: "ab", count: 32)
        let query = Self.query + "&X-Amz-Content-Sha256=" + hash
        let request = SignatureV4.Request(method: "PUT", path: "/test.txt", query: Substring(query), headers: [("Host", Self.host)],
                                          signedHeaders: ["host"], payloadHash: hash)
        let signature = SignatureV4.sign(request, secret: SignatureV4Tests.secret, amzDate: "20130524T000000Z",
                                         scope: SignatureV4Tests.scope)
        let head = try Self.head("/test.txt?\(query)&X-Amz-Signature=\(signature)", method: "PUT")
        #expect(try Self.authenticator.verify(head, nowSeconds: Self.signedAt + 60).payload == .sha256(hash))
    }
}
