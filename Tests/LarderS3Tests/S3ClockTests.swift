import Foundation
import LarderS3
import LarderTestSupport
import LarderWire
import Testing

private typealias A = S3AuthErrorTests

/// The S3 listener judges a presigned URL's expiry and a signature's time
/// window by the clock of the namespace the request's key works in: a test
/// moves time to see its URLs expire.
@Suite(.blockingLane) struct S3ClockTests {
    static let nsKey = "ns-key"
    static let nsSecret = "ns-secret"

    static func server() throws -> (TestServer, Int) {
        let server = try TestServer {
            $0.s3 = S3Configuration(port: 0, credentials: S3Credentials(keys: [A.accessKey: A.secret, Self.nsKey: Self.nsSecret],
                                                                        namespaces: [Self.nsKey: "w1"]))
        }
        guard let port = server.s3Port else { throw ClientError("no S3 listener") }
        return (server, port)
    }

    static func advance(_ server: TestServer, _ base: String, _ duration: String) throws {
        let moved = try server.client().send("POST", base + "/clock", body: Array(#"{"advance":"\#(duration)"}"#.utf8))
        #expect(moved.status == 200, "\(moved.text)")
    }

    @Test func aPresignedURLExpiresWhenItsNamespacesClockPassesIt() throws {
        let (server, port) = try Self.server()
        try A.prepare(port)
        let connection = try HTTPClientConnection(port: port)
        let url = A.presign("GET", "/matrix/kept", expires: 3600)
        #expect(try connection.request("GET", url).status == 200)
        try Self.advance(server, "", "61m")
        A.expectError(try connection.request("GET", url), 403, "AccessDenied", "a presigned URL past its hour")
        // A signature made now, by the system clock, is now 61 minutes in the past.
        let signed = A.sign("GET", "/matrix/kept")
        A.expectError(try A.send(port, "GET", "/matrix/kept", signed), 403, "RequestTimeTooSkewed", "a header signature an hour old")
        // Signed at the namespace's time, it is good.
        #expect(try connection.request("GET", A.presign("GET", "/matrix/kept", at: A.now + 61 * 60)).status == 200)
        #expect(try server.client().send("DELETE", "/clock").status == 200)
        #expect(try connection.request("GET", url).status == 200)
    }

    @Test func aKeyBoundToANamespaceReadsThatNamespacesClock() throws {
        let (server, port) = try Self.server()
        // The namespace's key makes its bucket (and opens w1).
        #expect(try A.send(port, "PUT", "/nsbucket", A.sign("PUT", "/nsbucket", key: Self.nsKey, keySecret: Self.nsSecret)).status == 200)
        #expect(try A.send(port, "PUT", "/nsbucket/k", A.sign("PUT", "/nsbucket/k", key: Self.nsKey, keySecret: Self.nsSecret),
                           body: Array("v".utf8)).status == 200)
        try A.prepare(port)
        let connection = try HTTPClientConnection(port: port)
        let nsURL = A.presign("GET", "/nsbucket/k", expires: 600, key: Self.nsKey, keySecret: Self.nsSecret)
        let defaultURL = A.presign("GET", "/matrix/kept", expires: 600)
        try Self.advance(server, "/ns/w1", "11m")
        A.expectError(try connection.request("GET", nsURL), 403, "AccessDenied", "w1's URL past its 10 minutes")
        #expect(try connection.request("GET", defaultURL).status == 200, "the default namespace's clock did not move")
    }
}
