import Foundation
@testable import LarderApp
import LarderRouting
import LarderServer
import LarderTestSupport
import LarderWire
import LarderHTTP
import Testing
#if canImport(Glibc)
import Glibc
#endif

private typealias S = StoreTestSupport

/// `--token`: every endpoint but `/healthz` and the viewer needs
/// `Authorization: Bearer <token>`; `/events` also takes `?access_token=`.
/// Refusals come before the body is read.
@Suite(.blockingLane) struct TokenAuthTests {
    static let token = "s3cret-Token_0.9~+/="
    static let bearer = [("Authorization", "Bearer \(token)")]
    static let wrong = [("Authorization", "Bearer s3cret-Token_0.9~+/-")]

    static func server(_ configure: (inout TestServer.Setup) -> Void = { _ in }) throws -> TestServer {
        try TestServer {
            $0.token = token
            $0.publicDirectory = Repository.path("Public")
            configure(&$0)
        }
    }

    /// A 401 as RFC 6750 section 3 has it: the challenge names the realm,
    /// and `error="invalid_token"` only when a token was sent.
    static func expectUnauthorized(_ response: ClientResponse, tokenSent: Bool, _ what: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 401, "\(what): \(response.status)", sourceLocation: sourceLocation)
        let challenge = tokenSent ? #"Bearer realm="larder", error="invalid_token""# : #"Bearer realm="larder""#
        #expect(response.header("WWW-Authenticate") == challenge, "\(what): \(response.header("WWW-Authenticate") ?? "no challenge")",
                sourceLocation: sourceLocation)
        if response.body.isEmpty { return }  // HEAD
        ProtocolWire.expectError(response, 401, "unauthorized", sourceLocation: sourceLocation)
    }

    /// Each endpoint class: refused without a token and with a wrong one,
    /// served with the right one; the refused writes changed nothing.
    @Test func everyEndpointClassNeedsTheToken() throws {
        let server = try Self.server { $0.allowFaults = true }
        let client = server.client()
        // (method, target, body, status with the token)
        let cases: [(String, String, String?, Int)] = [
            ("PUT", "/store/users/1", #"{"name":"ada"}"#, 201),
            ("GET", "/store/users/1", nil, 200),
            ("HEAD", "/store/users/1", nil, 200),
            ("POST", "/store/lists/a", "1", 200),                 // JSON append
            ("PATCH", "/store/users/1", #"{"age":36}"#, 200),    // merge patch
            ("POST", "/store/jobs/", "job", 201),                 // create under a generated key
            ("GET", "/store/", nil, 200),                         // listing
            ("GET", "/store", nil, 200),
            ("GET", "/store/users/?limit=5", nil, 200),
            ("OPTIONS", "/store/users/1", nil, 204),              // a plain OPTIONS is a request like any other
            ("GET", "/metrics", nil, 200),
            ("DELETE", "/store/users/1", nil, 204),
            ("DELETE", "/store/jobs/", nil, 200),                 // bulk delete
            ("GET", "/snapshot", nil, 200),
            ("POST", "/snapshot?prefix=lists/", #"{"key":"lists/b","contentType":"application/json","expires":null,"json":[2]}"#, 200),
            ("PUT", "/faults", "[]", 200),
            ("GET", "/faults", nil, 200),
            ("DELETE", "/faults", nil, 200),
            ("GET", "/no/such/endpoint", nil, 404),               // unknown paths too: a 404 tells nothing
            ("GET", "//store/users/1", nil, 404),
        ]
        for (method, target, body, expected) in cases {
            let bytes = body.map { Array($0.utf8) }
            let headers = method == "PATCH" ? [("Content-Type", "application/merge-patch+json")] : []
            let missing = try client.send(method, target, headers: headers, body: bytes)
            Self.expectUnauthorized(missing, tokenSent: false, "\(method) \(target) without a token")
            let wrong = try client.send(method, target, headers: headers + Self.wrong, body: bytes)
            Self.expectUnauthorized(wrong, tokenSent: true, "\(method) \(target) with a wrong token")
            let right = try client.send(method, target, headers: headers + Self.bearer, body: bytes)
            #expect(right.status == expected, "\(method) \(target) with the token: \(right.status) \(right.text)")
        }
        // The refused PUT, POST and PATCH wrote nothing; the listing shows only what the token wrote.
        let listing = try client.send("GET", "/store/", headers: Self.bearer)
        #expect(listing.json?["keys"] as? [[String: Any]] != nil)
        let keys = (listing.json?["keys"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
        #expect(keys == ["lists/a", "lists/b"], "keys after the refused writes: \(keys)")
        #expect(try client.send("GET", "/store/lists/a", headers: Self.bearer).text == "[1]")
    }

    @Test func healthAndTheViewerStayOpen() throws {
        let server = try Self.server()
        let client = server.client()
        #expect(try client.send("GET", "/healthz").status == 200)
        #expect(try client.send("HEAD", "/healthz").status == 200)
        let index = try client.send("GET", "/")
        #expect(index.status == 200)
        #expect(index.text.contains("<title>Larder</title>"))
        #expect(try client.send("GET", "/viewer/index.html").status == 200)
        #expect(try client.send("GET", "/viewer").status == 200)
        // An open prefix only ever reaches the viewer's route: no way round to the store.
        #expect(try client.send("GET", "/viewer/../store/").status == 404)
        Self.expectUnauthorized(try client.send("GET", "/healthz/../store/"), tokenSent: false, "a path near /healthz")
        Self.expectUnauthorized(try client.send("GET", "/viewerx"), tokenSent: false, "a path near /viewer")
    }

    @Test func schemeIsCaseInsensitiveAndOtherSchemesAreNoToken() throws {
        let server = try Self.server()
        let client = server.client()
        #expect(try client.send("GET", "/store/", headers: [("Authorization", "bearer \(Self.token)")]).status == 200)
        #expect(try client.send("GET", "/store/", headers: [("Authorization", "BEARER   \(Self.token)")]).status == 200)
        Self.expectUnauthorized(try client.send("GET", "/store/", headers: [("Authorization", "Basic dXNlcjpwYXNz")]),
                                tokenSent: false, "Basic credentials")
        Self.expectUnauthorized(try client.send("GET", "/store/", headers: [("Authorization", "Bearer")]),
                                tokenSent: false, "Bearer with no token")
        Self.expectUnauthorized(try client.send("GET", "/store/", headers: [("Authorization", "Bearer \(Self.token)x")]),
                                tokenSent: true, "a longer token")
        Self.expectUnauthorized(try client.send("GET", "/store/", headers: [("Authorization", "Bearer \(Self.token.dropLast())")]),
                                tokenSent: true, "a prefix of the token")
        Self.expectUnauthorized(try client.send("HEAD", "/store/"), tokenSent: false, "HEAD without a token")
    }

    /// RFC 6750 2.3: `/events` takes `?access_token=` (EventSource cannot
    /// send headers); no other endpoint does.
    @Test func eventsTakeAnAccessTokenParameter() throws {
        let server = try Self.server()
        let client = server.client()
        let encoded = S.encodeQuery(Self.token)

        let feed = try SSEClient(port: server.port, target: "/events?prefix=a/&access_token=\(encoded)")
        defer { feed.close() }
        try feed.readHead()
        #expect(feed.status == 200)
        #expect(try client.put("a/1", Array("x".utf8), headers: Self.bearer).status == 201)
        let event = try feed.nextEvent()
        #expect(event?.event == "put")
        #expect(event?.json?["key"] as? String == "a/1")

        let byHeader = try SSEClient(port: server.port, target: "/events", headers: Self.bearer)
        defer { byHeader.close() }
        try byHeader.readHead()
        #expect(byHeader.status == 200)

        // The name decoded as the application reads it.
        let escapedName = try SSEClient(port: server.port, target: "/events?access%5Ftoken=\(encoded)")
        defer { escapedName.close() }
        try escapedName.readHead()
        #expect(escapedName.status == 200)

        Self.expectUnauthorized(try client.send("GET", "/events?access_token=nope"), tokenSent: true, "a wrong access_token")
        Self.expectUnauthorized(try client.send("GET", "/events"), tokenSent: false, "/events without a token")
        Self.expectUnauthorized(try client.send("GET", "/store/a/1?access_token=\(encoded)"), tokenSent: false,
                                "access_token on a value")
        Self.expectUnauthorized(try client.send("GET", "/metrics?access_token=\(encoded)"), tokenSent: false,
                                "access_token on /metrics")
        // A header, when sent, is the credential that counts.
        Self.expectUnauthorized(try client.send("GET", "/events?access_token=\(encoded)", headers: Self.wrong),
                                tokenSent: true, "a wrong header beside a right access_token")
    }

    /// The 401 comes before the body: with `Expect: 100-continue` no 100 is
    /// sent, and a large announced body is never waited for.
    @Test func refusedBeforeTheBody() throws {
        let server = try Self.server()

        let expecting = try server.connection(timeout: 5)
        try expecting.send("PUT /store/big HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n")
        // Answered without the body: waiting for it would meet the 5 s socket timeout.
        let first = try expecting.readResponse(skipInterim: false)
        #expect(first.status == 401, "the first answer is \(first.status), not the 401")
        Self.expectUnauthorized(first, tokenSent: false, "PUT with Expect: 100-continue")
        #expect(ProtocolWire.closedByServer(expecting), "the connection stays open for a body that is not wanted")

        // 1 GiB announced, none of it sent: answered at once, then closed.
        let large = try server.connection(timeout: 5)
        try large.send("PUT /store/big HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1073741824\r\n"
                       + "Authorization: Bearer nope\r\n\r\n" + String(repeating: "x", count: 1000))
        let refused = try large.readResponse()
        Self.expectUnauthorized(refused, tokenSent: true, "a large PUT with a wrong token")
        ProtocolWire.expectCloses(refused, large)

        // A small body is skipped, and the connection goes on.
        let small = try server.connection(timeout: 5)
        try small.send("PUT /store/small HTTP/1.1\r\nHost: localhost\r\nContent-Length: 23\r\n\r\n"
                       + "GET /store/ HTTP/1.1\r\n\r\n")
        Self.expectUnauthorized(try small.readResponse(), tokenSent: false, "a small PUT")
        let next = try small.request("GET", "/healthz")
        #expect(next.status == 200, "the skipped body was read as a request, or the connection closed")

        #expect(try server.client().send("GET", "/store/big", headers: Self.bearer).status == 404)
        #expect(try server.client().send("GET", "/store/small", headers: Self.bearer).status == 404)
    }

    @Test func tokensThatCannotBeSentAreRefusedAtStart() throws {
        for bad in ["", "two words", "tab\there", "caf\u{E9}"] {
            #expect(throws: ConfigurationError.self, "token \(bad.debugDescription)") {
                _ = try TestServer { $0.token = bad }
            }
        }
    }

    @Test func constantTimeCompareIsCorrect() {
        let secret = Array("correct horse".utf8)
        #expect(ConstantTime.equals(secret, secret))
        #expect(ConstantTime.equals(secret[...], secret))
        #expect(!ConstantTime.equals([UInt8](), secret))
        #expect(!ConstantTime.equals(secret.dropLast(), secret))
        #expect(!ConstantTime.equals(secret + [0x20], secret))
        #expect(!ConstantTime.equals(secret + secret, secret), "the secret twice (the compare wraps round it)")
        #expect(!ConstantTime.equals([UInt8](), []), "an empty secret matches nothing")
        #expect(!ConstantTime.equals(secret, []))
        for i in secret.indices {
            for flip: UInt8 in [0x01, 0x20, 0x80] {
                var other = secret
                other[i] ^= flip
                #expect(!ConstantTime.equals(other, secret), "byte \(i) flipped by \(flip)")
            }
        }
        #expect(ConstantTime.equals("é".utf8, Array("é".utf8)))
    }

    @Test func bearerTokenParsing() {
        func parse(_ text: String) -> String? {
            TokenAuth.bearerToken(Array(text.utf8)[...]).map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(parse("Bearer abc") == "abc")
        #expect(parse("bEaReR  abc ") == "abc")
        #expect(parse("Bearer a=b") == "a=b")
        #expect(parse("Bearerabc") == nil)
        #expect(parse("Bearer ") == nil)
        #expect(parse("Basic abc") == nil)
        #expect(parse("Beare abc") == nil)
        #expect(parse("") == nil)
    }
}
