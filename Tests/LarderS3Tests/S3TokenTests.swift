import Foundation
import LarderApp
import LarderRouting
import LarderServer
@testable import LarderS3
import LarderTestSupport
import LarderWire
import Testing

/// API.md, S3-compatible face: with `--token` set the S3 listener is
/// protected too. The built-in default key is off; only configured keys
/// are accepted, and with none every S3 request is `403 InvalidAccessKeyId`
/// (the start-up warning is checked on the real binary by
/// `Tests/edges/edges_suite.py`).
@Suite(.blockingLane) struct S3TokenTests {
    static func server(credentials: S3Credentials?, token: String? = "t0ken") throws -> (TestServer, Int) {
        let server = try TestServer {
            $0.token = token
            $0.s3 = S3Configuration(port: 0, credentials: credentials)
        }
        guard let port = server.s3Port else { throw ClientError("no S3 listener") }
        return (server, port)
    }

    static func listBuckets(_ port: Int, key: String, secret: String) throws -> ClientResponse {
        let signed = S3AuthErrorTests.sign("GET", "/", key: key, keySecret: secret)
        return try HTTPClientConnection(port: port, timeout: 10).request("GET", "/", headers: signed.headers)
    }

    static func expectInvalidKey(_ response: ClientResponse, _ what: String) {
        #expect(response.status == 403, "\(what): \(response.status)")
        #expect(response.text.contains("<Code>InvalidAccessKeyId</Code>"), "\(what): \(response.text)")
    }

    @Test func aTokenTurnsTheDefaultKeyOffAndWithoutKeysEverythingIsRefused() throws {
        let (server, port) = try Self.server(credentials: nil)
        defer { server.stop() }
        Self.expectInvalidKey(try Self.listBuckets(port, key: S3Credentials.defaultAccessKey, secret: S3Credentials.defaultSecretKey),
                              "the default key")
        let unsigned = try HTTPClientConnection(port: port, timeout: 10).request("PUT", "/bucket/key", body: Array("x".utf8))
        Self.expectInvalidKey(unsigned, "an unsigned PUT")
        #expect(unsigned.text.contains("requires a token"), "the message says why: \(unsigned.text)")
        let stored = try server.client().get("bucket/key", headers: [("Authorization", "Bearer t0ken")])
        #expect(stored.status == 404, "a refused PUT stored something")
    }

    @Test func aTokenKeepsConfiguredKeysWorking() throws {
        let (server, port) = try Self.server(credentials: S3Credentials(keys: ["worker": "worker-secret"]))
        defer { server.stop() }
        #expect(try Self.listBuckets(port, key: "worker", secret: "worker-secret").status == 200)
        Self.expectInvalidKey(try Self.listBuckets(port, key: S3Credentials.defaultAccessKey, secret: S3Credentials.defaultSecretKey),
                              "the default key")
    }

    @Test func withoutATokenTheDefaultKeyStillWorks() throws {
        let (server, port) = try Self.server(credentials: nil, token: nil)
        defer { server.stop() }
        #expect(try Self.listBuckets(port, key: S3Credentials.defaultAccessKey, secret: S3Credentials.defaultSecretKey).status == 200)
    }
}
