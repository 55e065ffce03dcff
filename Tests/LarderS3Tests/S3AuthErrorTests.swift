import Crypto
import Foundation
import LarderApp
import LarderRouting
import LarderServer
@testable import LarderS3
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The errors S3 gives for requests that are signed wrong or whose body
/// does not hold what was announced, over real sockets against a real
/// server: each is S3's XML error, and a refused upload leaves the object
/// as it was. Requests are signed here with `SignatureV4` (tested against
/// AWS's examples), chunk signatures with HMAC from the spec.
@Suite(.blockingLane) struct S3AuthErrorTests {
    static let accessKey = "matrix-key"
    static let secret = "matrix-secret"

    static func server() throws -> (TestServer, Int) {
        let server = try TestServer {
            $0.s3 = S3Configuration(port: 0, credentials: S3Credentials(keys: [Self.accessKey: Self.secret]))
        }
        guard let port = server.s3Port else { throw ClientError("no S3 listener") }
        return (server, port)
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    static func amzDate(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// A request signed in its Authorization header, as sent by
    /// `HTTPClientConnection.request` (`Host: localhost`).
    struct Signed {
        var headers: [(String, String)]
        var signature: String
        var amzDate: String
        var scope: SignatureV4.Scope
    }

    /// `key`/`keySecret`: the pair to sign with (this suite's by default).
    static func sign(_ method: String, _ target: String, payloadHash: String = "UNSIGNED-PAYLOAD", headers extra: [(String, String)] = [],
                     at seconds: Int64 = now, region: String = "us-east-1",
                     key: String = accessKey, keySecret: String = secret) -> Signed {
        let date = amzDate(seconds)
        let scope = SignatureV4.Scope(date: String(date.prefix(8)), region: region, service: "s3")
        let headers = [("Host", "localhost"), ("x-amz-date", date), ("x-amz-content-sha256", payloadHash)] + extra
        let question = target.firstIndex(of: "?")
        let request = SignatureV4.Request(
            method: method, path: Substring(target[..<(question ?? target.endIndex)]),
            query: question.map { target[target.index(after: $0)...] }, headers: headers,
            signedHeaders: headers.map { $0.0.lowercased() }.sorted(), payloadHash: payloadHash)
        let signature = SignatureV4.sign(request, secret: keySecret, amzDate: date, scope: scope)
        let authorization = "AWS4-HMAC-SHA256 Credential=\(key)/\(scope.string), "
            + "SignedHeaders=\(request.signedHeaders.joined(separator: ";")), Signature=\(signature)"
        return Signed(headers: Array(headers.dropFirst()) + [("Authorization", authorization)], signature: signature,
                      amzDate: date, scope: scope)
    }

    /// A presigned target for `method target` signed at `seconds`, good for `expires`.
    static func presign(_ method: String, _ path: String, at seconds: Int64 = now, expires: Int = 300,
                        key: String = accessKey, keySecret: String = secret) -> String {
        let date = amzDate(seconds)
        let scope = SignatureV4.Scope(date: String(date.prefix(8)), region: "us-east-1", service: "s3")
        let query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=\(key)%2F\(scope.string.replacingOccurrences(of: "/", with: "%2F"))"
            + "&X-Amz-Date=\(date)&X-Amz-Expires=\(expires)&X-Amz-SignedHeaders=host"
        let request = SignatureV4.Request(method: method, path: Substring(path), query: Substring(query),
                                          headers: [("Host", "localhost")], signedHeaders: ["host"], payloadHash: "UNSIGNED-PAYLOAD")
        return "\(path)?\(query)&X-Amz-Signature=\(SignatureV4.sign(request, secret: keySecret, amzDate: date, scope: scope))"
    }

    static func send(_ port: Int, _ method: String, _ target: String, _ signed: Signed, body: [UInt8]? = nil) throws -> ClientResponse {
        let connection = try HTTPClientConnection(port: port)
        defer { connection.close() }
        return try connection.request(method, target, headers: signed.headers, body: body)
    }

    /// `bucket` with `key` holding `old value`.
    static func prepare(_ port: Int, bucket: String = "matrix", key: String = "kept") throws {
        #expect(try send(port, "PUT", "/\(bucket)", sign("PUT", "/\(bucket)")).status == 200)
        #expect(try send(port, "PUT", "/\(bucket)/\(key)", sign("PUT", "/\(bucket)/\(key)"), body: Array("old value".utf8)).status == 200)
    }

    static func stored(_ port: Int, bucket: String = "matrix", key: String = "kept") throws -> String {
        let response = try send(port, "GET", "/\(bucket)/\(key)", sign("GET", "/\(bucket)/\(key)"))
        return "\(response.status) \(response.text)"
    }

    /// Asserts S3's XML error: the status and `<Code>`.
    static func expectError(_ response: ClientResponse, _ status: Int, _ code: String, _ what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "\(what): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/xml", "\(what)", sourceLocation: sourceLocation)
        #expect(response.text.contains("<Code>\(code)</Code>"), "\(what): \(response.text)", sourceLocation: sourceLocation)
        #expect(response.text.contains("<RequestId>"), "\(what)", sourceLocation: sourceLocation)
    }

    @Test func aMalformedAuthorizationIsAuthorizationHeaderMalformed() throws {
        let (server, port) = try Self.server()
        defer { server.stop() }
        let good = Self.sign("GET", "/")
        let credential = "Credential=\(Self.accessKey)/\(good.scope.date)"
        let tail = "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=\(good.signature)"
        for authorization in [
            "AWS4-HMAC-SHA256 \(credential)/us-east-1/s3/aws4_request",  // no SignedHeaders, no Signature
            "AWS4-HMAC-SHA256 garbage",
            "AWS4-HMAC-SHA512 \(credential)/us-east-1/s3/aws4_request, \(tail)",
            "AWS4-HMAC-SHA256 \(credential)/us-east-1/ec2/aws4_request, \(tail)",  // not s3
            "AWS4-HMAC-SHA256 \(credential)/us-east-1/s3/aws5_request, \(tail)",  // not aws4_request
            "AWS4-HMAC-SHA256 \(credential)/s3/aws4_request, \(tail)",  // no region
            "AWS4-HMAC-SHA256 Credential=\(Self.accessKey)/2026-1-1/us-east-1/s3/aws4_request, \(tail)",
        ] {
            var signed = good
            signed.headers[signed.headers.count - 1] = ("Authorization", authorization)
            Self.expectError(try Self.send(port, "GET", "/", signed), 400, "AuthorizationHeaderMalformed", authorization)
        }
        // Any region is taken: the signature is checked in the one signed for.
        #expect(try Self.send(port, "GET", "/", Self.sign("GET", "/", region: "eu-west-3")).status == 200)
        #expect(try Self.send(port, "GET", "/", Self.sign("GET", "/", region: "moon-base-1")).status == 200)
    }

    @Test func aSkewedClockIsRequestTimeTooSkewed() throws {
        let (server, port) = try Self.server()
        defer { server.stop() }
        try Self.prepare(port)
        for offset: Int64 in [-16 * 60, 16 * 60] {
            Self.expectError(try Self.send(port, "GET", "/", Self.sign("GET", "/", at: Self.now + offset)), 403, "RequestTimeTooSkewed",
                             "signed \(offset) s off")
            let put = Self.sign("PUT", "/matrix/kept", at: Self.now + offset)
            Self.expectError(try Self.send(port, "PUT", "/matrix/kept", put, body: Array("new".utf8)), 403, "RequestTimeTooSkewed",
                             "a PUT signed \(offset) s off")
        }
        #expect(try Self.send(port, "GET", "/", Self.sign("GET", "/", at: Self.now - 14 * 60)).status == 200)
        // Presigned: signed in the future, or expired.
        let connection = try HTTPClientConnection(port: port)
        defer { connection.close() }
        Self.expectError(try connection.request("GET", Self.presign("GET", "/matrix/kept", at: Self.now + 20 * 60)), 403,
                         "RequestTimeTooSkewed", "a presigned URL signed 20 minutes ahead")
        let expired = try connection.request("GET", Self.presign("GET", "/matrix/kept", at: Self.now - 600, expires: 60))
        Self.expectError(expired, 403, "AccessDenied", "an expired presigned URL")
        #expect(expired.text.contains("Request has expired"))
        let good = try connection.request("GET", Self.presign("GET", "/matrix/kept"))
        #expect(good.status == 200 && good.text == "old value")
        #expect(try Self.stored(port) == "200 old value")
    }

    @Test func aBodyShorterThanItsContentLengthIsIncompleteBody() throws {
        let (server, port) = try Self.server()
        defer { server.stop() }
        try Self.prepare(port)
        let signed = Self.sign("PUT", "/matrix/kept")
        let connection = try HTTPClientConnection(port: port)
        defer { connection.close() }
        var head = "PUT /matrix/kept HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n"
        for (name, value) in signed.headers { head += "\(name): \(value)\r\n" }
        try connection.send(Array((head + "\r\n").utf8) + [UInt8](repeating: 0x6E, count: 50))
        connection.shutdownWrite()  // the client is done: 50 bytes of the 100 announced
        Self.expectError(try connection.readResponse(), 400, "IncompleteBody", "50 of 100 bytes")
        #expect(try Self.stored(port) == "200 old value")

        // A DeleteObjects document cut short the same way deletes nothing.
        let delete = Self.sign("POST", "/matrix?delete")
        let short = try HTTPClientConnection(port: port)
        defer { short.close() }
        head = "POST /matrix?delete HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n"
        for (name, value) in delete.headers { head += "\(name): \(value)\r\n" }
        try short.send(head + "\r\n<Delete><Object><Key>kept</Key></Object>")
        short.shutdownWrite()
        Self.expectError(try short.readResponse(), 400, "IncompleteBody", "a DeleteObjects document cut short")
        #expect(try Self.stored(port) == "200 old value")
    }

    /// A signed aws-chunked body: `chunks` signed in a chain seeded with the
    /// request's signature (`spoil`: the index of a chunk whose signature is
    /// wrong). The request's headers, and the framed body.
    static func signedChunked(_ target: String, method: String = "PUT", chunks: [[UInt8]], declared: Int? = nil,
                              spoil: Int? = nil) -> ([(String, String)], [UInt8]) {
        var body: [UInt8] = []
        let all = chunks + [[]]
        func frame(_ previous: String, _ date: String, _ scope: SignatureV4.Scope) -> [UInt8] {
            let key = SignatureV4.signingKey(secret: secret, scope: scope)
            var previous = previous
            var out: [UInt8] = []
            for (index, chunk) in all.enumerated() {
                let toSign = ["AWS4-HMAC-SHA256-PAYLOAD", date, scope.string, previous, SignatureV4.emptyPayloadHash,
                              SignatureV4.hex(SHA256.hash(data: chunk))].joined(separator: "\n")
                previous = SignatureV4.hex(HMAC<SHA256>.authenticationCode(for: Array(toSign.utf8), using: key))
                let signature = index == spoil ? String(repeating: "0", count: 64) : previous
                out += Array("\(String(chunk.count, radix: 16));chunk-signature=\(signature)\r\n".utf8)
                if !chunk.isEmpty { out += chunk + Array("\r\n".utf8) }
            }
            return out + Array("\r\n".utf8)
        }
        // The framing's length does not depend on the signatures: sign the
        // Content-Length with a first framing, then frame with the real seed.
        let length = frame(String(repeating: "0", count: 64), amzDate(now), SignatureV4Tests.scope).count
        let signed = sign(method, target, payloadHash: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                          headers: [("Content-Encoding", "aws-chunked"), ("Content-Length", String(length)),
                                    ("x-amz-decoded-content-length", String(declared ?? chunks.reduce(0) { $0 + $1.count }))])
        body = frame(signed.signature, signed.amzDate, signed.scope)
        return (signed.headers, body)
    }

    @Test func signedChunksAreVerifiedAsTheyArrive() throws {
        let (server, port) = try Self.server()
        defer { server.stop() }
        try Self.prepare(port)
        let chunks = [[UInt8](repeating: 0x41, count: 65_536), [UInt8](repeating: 0x42, count: 65_536), Array("tail".utf8)]
        let (headers, body) = Self.signedChunked("/matrix/streamed", chunks: chunks)
        let connection = try HTTPClientConnection(port: port)
        let done = try connection.request("PUT", "/matrix/streamed", headers: headers, body: body)
        connection.close()
        #expect(done.status == 200, "\(done.text)")
        #expect(try Self.stored(port, key: "streamed") == "200 " + String(decoding: chunks.joined(), as: UTF8.self))

        // The first chunk's signature is wrong: answered 403 before the rest is sent.
        let (badHeaders, badBody) = Self.signedChunked("/matrix/kept", chunks: chunks, spoil: 0)
        let bad = try HTTPClientConnection(port: port)
        defer { bad.close() }
        var head = "PUT /matrix/kept HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in badHeaders { head += "\(name): \(value)\r\n" }
        try bad.send(Array((head + "\r\n").utf8) + Array(badBody.prefix(70_000)))
        Self.expectError(try bad.readResponse(), 403, "SignatureDoesNotMatch", "a bad first chunk signature")
        #expect(ProtocolWire.closedByServer(bad))
        #expect(try Self.stored(port) == "200 old value")

        // The last chunk's (the empty one's) signature is wrong.
        let (lastHeaders, lastBody) = Self.signedChunked("/matrix/kept", chunks: chunks, spoil: 3)
        let last = try HTTPClientConnection(port: port)
        defer { last.close() }
        Self.expectError(try last.request("PUT", "/matrix/kept", headers: lastHeaders, body: lastBody), 403, "SignatureDoesNotMatch",
                         "a bad final chunk signature")
        #expect(try Self.stored(port) == "200 old value")
    }

    @Test func aChunkedBodyShortOfItsDecodedLengthIsIncompleteBody() throws {
        let (server, port) = try Self.server()
        defer { server.stop() }
        try Self.prepare(port)
        let chunks = [Array("ten bytes!".utf8)]
        let (headers, body) = Self.signedChunked("/matrix/kept", chunks: chunks, declared: 20)
        let connection = try HTTPClientConnection(port: port)
        Self.expectError(try connection.request("PUT", "/matrix/kept", headers: headers, body: body), 400, "IncompleteBody",
                         "10 bytes of a declared 20")
        connection.close()
        #expect(try Self.stored(port) == "200 old value")

        // Framing cut short by the client's half-close.
        let (fullHeaders, fullBody) = Self.signedChunked("/matrix/kept", chunks: chunks)
        let cut = try HTTPClientConnection(port: port)
        defer { cut.close() }
        var head = "PUT /matrix/kept HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in fullHeaders { head += "\(name): \(value)\r\n" }
        try cut.send(Array((head + "\r\n").utf8) + Array(fullBody.prefix(fullBody.count - 5)))
        cut.shutdownWrite()
        Self.expectError(try cut.readResponse(), 400, "IncompleteBody", "a chunked body cut short")
        #expect(try Self.stored(port) == "200 old value")
    }

    @Test func aSmallSignedChunkedBodyIsVerifiedToo() throws {
        // DeleteObjects' document sent as a signed aws-chunked body.
        let (server, port) = try Self.server()
        defer { server.stop() }
        try Self.prepare(port)
        let document = Array("<Delete><Object><Key>kept</Key></Object></Delete>".utf8)
        let (badHeaders, badBody) = Self.signedChunked("/matrix?delete", method: "POST", chunks: [document], spoil: 0)
        let bad = try HTTPClientConnection(port: port)
        Self.expectError(try bad.request("POST", "/matrix?delete", headers: badHeaders, body: badBody), 403, "SignatureDoesNotMatch",
                         "a DeleteObjects document with a bad chunk signature")
        bad.close()
        #expect(try Self.stored(port) == "200 old value")
        let (headers, body) = Self.signedChunked("/matrix?delete", method: "POST", chunks: [document])
        let connection = try HTTPClientConnection(port: port)
        defer { connection.close() }
        let deleted = try connection.request("POST", "/matrix?delete", headers: headers, body: body)
        #expect(deleted.status == 200 && deleted.text.contains("<Deleted><Key>kept</Key></Deleted>"), "\(deleted.text)")
        #expect(try Self.stored(port).hasPrefix("404 "))
    }
}
