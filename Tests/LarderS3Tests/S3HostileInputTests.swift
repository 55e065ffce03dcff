import Foundation
import LarderApp
import LarderRouting
import LarderServer
@testable import LarderS3
import LarderTestSupport
import LarderWire
import Testing

/// Requests a review found could crash the server or answer 500: each is
/// refused with S3's error, and the server keeps serving.
@Suite(.blockingLane) struct S3HostileInputTests {
    static func alive(_ port: Int) throws -> Bool {
        try S3AuthErrorTests.send(port, "GET", "/", S3AuthErrorTests.sign("GET", "/")).status == 200
    }

    @Test func aSignedChunkSizeIsHexDigitsOnly() throws {
        let (server, port) = try S3AuthErrorTests.server()
        defer { server.stop() }
        try S3AuthErrorTests.prepare(port)
        for size in ["-1", "+1", " 1", "1 ", "0x10"] {
            let signed = S3AuthErrorTests.sign("PUT", "/matrix/kept", headers: [("Content-Encoding", "aws-chunked"),
                                                                             ("x-amz-decoded-content-length", "1")])
            let response = try S3AuthErrorTests.send(port, "PUT", "/matrix/kept", signed, body: Array("\(size)\r\nX\r\n0\r\n\r\n".utf8))
            S3AuthErrorTests.expectError(response, 400, "IncompleteBody", "chunk size \(size)")
            #expect(try S3AuthErrorTests.stored(port) == "200 old value")
        }
        #expect(try Self.alive(port))
    }

    @Test func listPartsTakesOnlyPartNumbersAsItsMarker() throws {
        let (server, port) = try S3AuthErrorTests.server()
        defer { server.stop() }
        try S3AuthErrorTests.prepare(port)
        let id = String(repeating: "a", count: 32)
        for marker in ["100000", "-1", "10001"] {
            let target = "/matrix/kept?part-number-marker=\(marker)&uploadId=\(id)"
            S3AuthErrorTests.expectError(try S3AuthErrorTests.send(port, "GET", target, S3AuthErrorTests.sign("GET", target)),
                                         400, "InvalidArgument", "part-number-marker \(marker)")
        }
        #expect(try Self.alive(port))
    }

    @Test func aVirtualHostBucketWithASlashIsNoBucket() throws {
        let (server, port) = try S3AuthErrorTests.server()
        defer { server.stop() }
        // A `Host` whose bucket part holds slashes, long enough that keys made
        // from it would pass 1,024 bytes (the multipart keys' `try!`); signed
        // for that very Host.
        let host = (0..<4).map { _ in String(repeating: "b", count: 240) }.joined(separator: "/") + ".localhost"
        let path = "/k", query = "uploadId=" + String(repeating: "a", count: 32)
        let date = S3AuthErrorTests.amzDate(S3AuthErrorTests.now)
        let scope = SignatureV4.Scope(date: String(date.prefix(8)), region: "us-east-1", service: "s3")
        let headers = [("Host", host), ("x-amz-date", date), ("x-amz-content-sha256", "UNSIGNED-PAYLOAD")]
        let request = SignatureV4.Request(method: "DELETE", path: Substring(path), query: Substring(query), headers: headers,
                                          signedHeaders: ["host", "x-amz-content-sha256", "x-amz-date"], payloadHash: "UNSIGNED-PAYLOAD")
        let signature = SignatureV4.sign(request, secret: S3AuthErrorTests.secret, amzDate: date, scope: scope)
        let connection = try HTTPClientConnection(port: port)
        defer { connection.close() }
        var head = "DELETE \(path)?\(query) HTTP/1.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Authorization: AWS4-HMAC-SHA256 Credential=\(S3AuthErrorTests.accessKey)/\(scope.string), "
            + "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=\(signature)\r\n\r\n"
        try connection.send(head)
        // The HTTP layer refuses such a Host before the face sees it (and the
        // face takes a bucket of one segment only, were one to reach it).
        let response = try connection.readResponse()
        #expect(response.status == 400, "\(response.status) \(response.text)")
        #expect(try Self.alive(port))
    }

    @Test func headersTooLargeToKeepAreMetadataTooLarge() throws {
        let (server, port) = try S3AuthErrorTests.server()
        defer { server.stop() }
        try S3AuthErrorTests.prepare(port)
        let many = (0..<700).map { ("x-amz-meta-\($0)", "v") }
        for (what, headers) in [("a 9 KB Content-Disposition", [("Content-Disposition", String(repeating: "d", count: 9000))]),
                                ("700 small metadata headers", many)] {
            let signed = S3AuthErrorTests.sign("PUT", "/matrix/kept", headers: headers)
            S3AuthErrorTests.expectError(try S3AuthErrorTests.send(port, "PUT", "/matrix/kept", signed, body: Array("new".utf8)),
                                         400, "MetadataTooLarge", what)
        }
        #expect(try S3AuthErrorTests.stored(port) == "200 old value")
    }
}
