import Crypto
@testable import LarderS3
import LarderTestSupport
import Testing

/// SigV4's steps against the examples AWS publishes for S3 ("Signature
/// Calculations for the Authorization Header: Transferring Payload in a
/// Single Chunk"), with its example key pair.
@Suite(.blockingLane) struct SignatureV4Tests {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    static let scope = SignatureV4.Scope(date: "20130524", region: "us-east-1", service: "s3")
    static let amzDate = "20130524T000000Z"
    static let host = (name: "Host", value: "examplebucket.s3.amazonaws.com")

    @Test func getObjectExample() {
        let request = SignatureV4.Request(
            method: "GET", path: "/test.txt", query: nil,
            headers: [Self.host, ("Range", "bytes=0-9"), ("x-amz-content-sha256", SignatureV4.emptyPayloadHash),
                      ("x-amz-date", Self.amzDate)],
            signedHeaders: ["host", "range", "x-amz-content-sha256", "x-amz-date"], payloadHash: SignatureV4.emptyPayloadHash)
        let canonical = SignatureV4.canonicalRequest(request)
        #expect(canonical == """
            GET
            /test.txt

            host:examplebucket.s3.amazonaws.com
            range:bytes=0-9
            x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            x-amz-date:20130524T000000Z

            host;range;x-amz-content-sha256;x-amz-date
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
        let toSign = SignatureV4.stringToSign(canonicalRequest: canonical, amzDate: Self.amzDate, scope: Self.scope)
        #expect(toSign == """
            AWS4-HMAC-SHA256
            20130524T000000Z
            20130524/us-east-1/s3/aws4_request
            7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
            """)
        #expect(SignatureV4.sign(request, secret: Self.secret, amzDate: Self.amzDate, scope: Self.scope)
            == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func putObjectExample() {
        let payload = Array("Welcome to Amazon S3.".utf8)
        let hash = SignatureV4.hex(SHA256.hash(data: payload))
        #expect(hash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let request = SignatureV4.Request(
            method: "PUT", path: "/test$file.text", query: nil,
            headers: [Self.host, ("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-date", Self.amzDate),
                      ("x-amz-storage-class", "REDUCED_REDUNDANCY"), ("x-amz-content-sha256", hash)],
            signedHeaders: ["date", "host", "x-amz-content-sha256", "x-amz-date", "x-amz-storage-class"], payloadHash: hash)
        #expect(SignatureV4.canonicalRequest(request).hasPrefix("PUT\n/test%24file.text\n\n"))
        #expect(SignatureV4.sign(request, secret: Self.secret, amzDate: Self.amzDate, scope: Self.scope)
            == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func getBucketLifecycleExample() {
        let request = SignatureV4.Request(
            method: "GET", path: "/", query: "lifecycle",
            headers: [Self.host, ("x-amz-date", Self.amzDate), ("x-amz-content-sha256", SignatureV4.emptyPayloadHash)],
            signedHeaders: ["host", "x-amz-content-sha256", "x-amz-date"], payloadHash: SignatureV4.emptyPayloadHash)
        #expect(SignatureV4.canonicalRequest(request).hasPrefix("GET\n/\nlifecycle=\n"))
        #expect(SignatureV4.sign(request, secret: Self.secret, amzDate: Self.amzDate, scope: Self.scope)
            == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    @Test func listObjectsExample() {
        // Parameters sorted by name whatever order they are sent in.
        let request = SignatureV4.Request(
            method: "GET", path: "/", query: "prefix=J&max-keys=2",
            headers: [Self.host, ("x-amz-date", Self.amzDate), ("x-amz-content-sha256", SignatureV4.emptyPayloadHash)],
            signedHeaders: ["host", "x-amz-content-sha256", "x-amz-date"], payloadHash: SignatureV4.emptyPayloadHash)
        #expect(SignatureV4.canonicalRequest(request).hasPrefix("GET\n/\nmax-keys=2&prefix=J\n"))
        #expect(SignatureV4.sign(request, secret: Self.secret, amzDate: Self.amzDate, scope: Self.scope)
            == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test func uriEncodingIsCanonicalWhateverTheClientSent() {
        // Lower-case hex, an encoded `~` and a raw space all sign as AWS encodes them.
        #expect(SignatureV4.canonicalQuery("b=%7e&a=x%2fy&c") == "a=x%2Fy&b=~&c=")
        let request = SignatureV4.Request(method: "GET", path: "/b/%7Ea%20b/c%2b", query: nil, headers: [],
                                          signedHeaders: [], payloadHash: "UNSIGNED-PAYLOAD")
        #expect(SignatureV4.canonicalRequest(request).hasPrefix("GET\n/b/~a%20b/c%2B\n"))
    }

    @Test func queryIsReadByBytes() {
        // Empty items skipped, a name without `=` has the empty value, `%XX` decoded, `+` kept, a lone `%` kept.
        let query = S3Query("a=1&&b&c=x%2Fy+z&d=%&e=%zz&=v")
        #expect(query.names == ["a", "b", "c", "d", "e", ""])
        #expect(query["a"] == "1" && query["b"] == "" && query["c"] == "x/y+z" && query["d"] == "%" && query["e"] == "%zz")
        #expect(query[""] == "v" && query["f"] == nil)
        #expect(S3Query("&").names.isEmpty && S3Query("").names.isEmpty && S3Query(nil).names.isEmpty)
        // X-Amz-Signature left out, pairs sorted by encoded name then value, equal names kept.
        #expect(SignatureV4.canonicalQuery("X-Amz-Signature=ab&z=2&z=1&%41=&b") == "A=&b=&z=1&z=2")
    }

    @Test func signingKeysAreCachedBySecretAndScope() {
        let cache = SigningKeyCache()
        let other = SignatureV4.Scope(date: "20130525", region: "us-east-1", service: "s3")
        for _ in 0..<2 {
            #expect(cache.key(secret: Self.secret, scope: Self.scope) == SignatureV4.signingKey(secret: Self.secret, scope: Self.scope))
            #expect(cache.key(secret: Self.secret, scope: other) == SignatureV4.signingKey(secret: Self.secret, scope: other))
            #expect(cache.key(secret: "x", scope: Self.scope) == SignatureV4.signingKey(secret: "x", scope: Self.scope))
        }
        // The keyed HMAC, copied, signs as a fresh one does, however often.
        let signing = cache.signing(secret: Self.secret, scope: Self.scope)
        for text in ["a", "string to sign", "a"] {
            #expect(signing.signature(stringToSign: text)
                == SignatureV4.signature(stringToSign: text, key: SignatureV4.signingKey(secret: Self.secret, scope: Self.scope)))
        }
        for n in 0..<(SigningKeyCache.limit + 10) {
            #expect(cache.key(secret: "s\(n)", scope: Self.scope) == SignatureV4.signingKey(secret: "s\(n)", scope: Self.scope))
        }
    }

    @Test func xmlTimestamps() {
        #expect(S3Time.iso8601(nanos: 1_369_353_600 * 1_000_000_000) == "2013-05-24T00:00:00.000Z")
        #expect(S3Time.iso8601(nanos: (1_369_353_600 + 86_400 * 222 + 3600 * 13 + 60 * 4 + 5) * 1_000_000_000 + 78_999_999)
            == "2014-01-01T13:04:05.078Z")
        #expect(S3Time.iso8601(nanos: 0) == "1970-01-01T00:00:00.000Z")
    }

    @Test func headerValuesAreFolded() {
        let request = SignatureV4.Request(method: "GET", path: "/", query: nil,
                                          headers: [("X-A", "  a   b\t c "), ("x-a", "d"), ("X-B", "plain value"), ("x-c", "")],
                                          signedHeaders: ["x-a", "x-b", "x-c"], payloadHash: "UNSIGNED-PAYLOAD")
        #expect(SignatureV4.canonicalRequest(request).hasPrefix("GET\n/\n\nx-a:a b c,d\nx-b:plain value\nx-c:\n\n"))
    }

    @Test func authorizationHeaderIsParsed() throws {
        let auth = try SigV4Authenticator.parse(
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb8")
        #expect(auth.accessKey == "AKIAIOSFODNN7EXAMPLE")
        #expect(auth.scope == Self.scope)
        #expect(auth.signedHeaders == ["host", "range", "x-amz-content-sha256", "x-amz-date"])
        #expect(auth.signature == "f0e8bdb8")
        #expect(throws: S3Error.self) { try SigV4Authenticator.parse("AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3") }
        #expect(throws: S3Error.self) { try SigV4Authenticator.parse("Bearer token") }
    }

    @Test func amzDates() {
        #expect(SigV4Authenticator.seconds(amzDate: "20130524T000000Z") == 1_369_353_600)
        #expect(SigV4Authenticator.seconds(amzDate: "20260102T030405Z") == 1_767_323_045)
        #expect(SigV4Authenticator.seconds(amzDate: "2013-05-24T00:00:00Z") == nil)
        #expect(SigV4Authenticator.seconds(amzDate: "20131324T000000Z") == nil)
    }

    @Test func virtualHostStyleNamesTheBucketInTheHost() {
        #expect(S3Path("/dir/k", host: "photos.localhost:9000") == .object(bucket: "photos", key: Array("dir/k".utf8)))
        #expect(S3Path("/", host: "Photos.LOCALHOST") == .bucket("photos"))
        #expect(S3Path("/photos/k", host: "localhost:9000") == .object(bucket: "photos", key: Array("k".utf8)))
        #expect(S3Path("/photos/k", host: "127.0.0.1:9000") == .object(bucket: "photos", key: Array("k".utf8)))
        #expect(S3Path("/", host: "[::1]:9000") == .service)
    }
}
