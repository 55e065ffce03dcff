import Foundation
@testable import LarderApp
import LarderRouting
import LarderServer
import LarderTestSupport
import LarderWire
import Testing

/// `--cors-origin`: preflights answered before auth, CORS headers on every
/// answer to an allowed origin (401s and the event stream included), none
/// for another origin; off unless configured.
@Suite(.blockingLane) struct CORSTests {
    static let app = "http://app.example:3000"
    static let bearer = TokenAuthTests.bearer

    static func server(origins: [String] = [app], token: Bool = true) throws -> TestServer {
        try TestServer {
            $0.corsOrigins = origins
            if token { $0.token = TokenAuthTests.token }
        }
    }

    static func preflight(_ client: WireClient, _ target: String, origin: String, method: String = "PUT",
                          headers: String? = nil) throws -> ClientResponse {
        var fields = [("Origin", origin), ("Access-Control-Request-Method", method)]
        if let headers { fields.append(("Access-Control-Request-Headers", headers)) }
        return try client.send("OPTIONS", target, headers: fields)
    }

    /// The comma-separated values of a header, trimmed.
    static func list(_ response: ClientResponse, _ name: String) -> [String] {
        response.headerValues(name).flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    static func expectCORS(_ response: ClientResponse, origin: String, _ what: String,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.headerValues("Access-Control-Allow-Origin") == [origin], "\(what): Access-Control-Allow-Origin",
                sourceLocation: sourceLocation)
        let exposed = list(response, "Access-Control-Expose-Headers")
        for name in ["ETag", "Location", "Last-Modified", "Content-Range", "Content-Encoding", "WWW-Authenticate",
                     "Larder-Expires", "Larder-Source", "Larder-Fault"] {
            #expect(exposed.contains(name), "\(what): \(name) is not exposed (\(exposed))", sourceLocation: sourceLocation)
        }
        // Every Larder-* header this answer carries is exposed.
        for (name, _) in response.headers where name.lowercased().hasPrefix("larder-") {
            #expect(exposed.contains(name), "\(what): \(name) is sent but not exposed", sourceLocation: sourceLocation)
        }
    }

    static func expectNoCORS(_ response: ClientResponse, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let cors = response.headers.filter { $0.0.lowercased().hasPrefix("access-control-") }
        #expect(cors.isEmpty, "\(what): \(cors)", sourceLocation: sourceLocation)
    }

    @Test func preflightFromAnAllowedOriginNeedsNoToken() throws {
        let server = try Self.server()
        let client = server.client()
        for target in ["/store/users/1", "/store/", "/events", "/metrics", "/anything"] {
            let answer = try Self.preflight(client, target, origin: Self.app, headers: "authorization, content-type, if-match")
            #expect(answer.status == 204, "preflight of \(target): \(answer.status)")
            #expect(answer.header("Access-Control-Allow-Origin") == Self.app)
            #expect(Self.list(answer, "Vary").contains("Origin"))
            #expect(Set(Self.list(answer, "Access-Control-Allow-Methods"))
                    == ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS"])
            #expect(Self.list(answer, "Access-Control-Allow-Headers") == ["authorization", "content-type", "if-match"])
            #expect(Int(answer.header("Access-Control-Max-Age") ?? "") ?? 0 > 0)
            #expect(answer.header("WWW-Authenticate") == nil)
        }
        // No requested headers: the fixed list.
        let plain = try Self.preflight(client, "/store/k", origin: Self.app, method: "GET")
        #expect(plain.status == 204)
        let fixed = Set(Self.list(plain, "Access-Control-Allow-Headers"))
        #expect(fixed.isSuperset(of: ["Authorization", "Content-Type", "Content-Encoding", "If-Match", "If-None-Match",
                                      "If-Modified-Since", "If-Unmodified-Since", "If-Range", "Range", "Last-Event-ID"]))
        // Origins compare case-insensitively (browsers send them lowercased).
        #expect(try Self.preflight(client, "/store/k", origin: "HTTP://App.Example:3000").status == 204)
    }

    @Test func preflightFromAnotherOriginIsForbidden() throws {
        let server = try Self.server()
        let client = server.client()
        for origin in ["http://evil.example", "http://app.example:3001", "https://app.example:3000", "null"] {
            let answer = try Self.preflight(client, "/store/k", origin: origin)
            ProtocolWire.expectError(answer, 403, "origin_not_allowed")
            Self.expectNoCORS(answer, "preflight from \(origin)")
        }
    }

    @Test func answersToAnAllowedOriginCarryTheHeaders() throws {
        let server = try Self.server()
        let client = server.client()
        let origin = [("Origin", Self.app)]

        let put = try client.send("PUT", "/store/c/k?ttl=600", headers: origin + Self.bearer, body: Array("value".utf8))
        #expect(put.status == 201)
        #expect(put.header("Larder-Expires") != nil)
        Self.expectCORS(put, origin: Self.app, "PUT 201 (after its body)")
        let get = try client.send("GET", "/store/c/k", headers: origin + Self.bearer)
        #expect(get.status == 200)
        Self.expectCORS(get, origin: Self.app, "GET 200")
        #expect(Self.list(get, "Vary").contains("Origin"))
        #expect(Self.list(get, "Vary").contains("Accept-Encoding"), "the value's own Vary is kept")
        #expect(get.headerValues("Vary").count == 1, "one Vary field")
        let created = try client.send("POST", "/store/c/", headers: origin + Self.bearer, body: Array("x".utf8))
        #expect(created.status == 201)
        Self.expectCORS(created, origin: Self.app, "POST create (Location)")
        let range = try client.send("GET", "/store/c/k", headers: origin + Self.bearer + [("Range", "bytes=0-1")])
        #expect(range.status == 206)
        Self.expectCORS(range, origin: Self.app, "206")

        // A refusal is readable by the page too: the 401 carries the headers.
        let refused = try client.send("GET", "/store/c/k", headers: origin)
        #expect(refused.status == 401)
        Self.expectCORS(refused, origin: Self.app, "401")
        let missing = try client.send("GET", "/store/c/none", headers: origin + Self.bearer)
        #expect(missing.status == 404)
        Self.expectCORS(missing, origin: Self.app, "404")
        // Open endpoints too.
        Self.expectCORS(try client.send("GET", "/healthz", headers: origin), origin: Self.app, "healthz")

        // Another origin: served as usual, but no CORS headers; the answer still varies on Origin.
        let other = try client.send("GET", "/store/c/k", headers: [("Origin", "http://evil.example")] + Self.bearer)
        #expect(other.status == 200)
        Self.expectNoCORS(other, "GET from another origin")
        #expect(Self.list(other, "Vary").contains("Origin"))
        // No Origin at all (curl, servers): no CORS headers either.
        let plain = try client.send("GET", "/store/c/k", headers: Self.bearer)
        Self.expectNoCORS(plain, "GET without Origin")
        #expect(Self.list(plain, "Vary").contains("Origin"), "a cache must not hand this answer to a page")
    }

    /// `EventSource` across origins: the pushed `/events` body gets the
    /// headers on its head, with the token as `access_token`.
    @Test func eventStreamCrossOrigin() throws {
        let server = try Self.server()
        let token = StoreTestSupport.encodeQuery(TokenAuthTests.token)
        let feed = try SSEClient(port: server.port, target: "/events?prefix=c/&access_token=\(token)",
                                 headers: [("Origin", Self.app)])
        defer { feed.close() }
        #expect(try feed.readHead() == 200)
        #expect(feed.header("Content-Type") == "text/event-stream")
        #expect(feed.header("Access-Control-Allow-Origin") == Self.app)
        #expect(feed.header("Access-Control-Expose-Headers")?.contains("ETag") == true)
        #expect(try server.client().send("PUT", "/store/c/e", headers: Self.bearer, body: Array("1".utf8)).status == 201)
        #expect(try feed.nextEvent()?.event == "put")

        let refused = try SSEClient(port: server.port, target: "/events", headers: [("Origin", Self.app)])
        defer { refused.close() }
        #expect(try refused.readHead() == 401)
        #expect(refused.header("Access-Control-Allow-Origin") == Self.app)
    }

    @Test func anyOriginWithoutATokenIsAStar() throws {
        let server = try Self.server(origins: ["*"], token: false)
        let client = server.client()
        let get = try client.send("GET", "/store/k", headers: [("Origin", "http://anywhere.example")])
        #expect(get.status == 404)
        #expect(get.header("Access-Control-Allow-Origin") == "*")
        #expect(!Self.list(get, "Vary").contains("Origin"), "a * answer does not vary")
        let preflight = try Self.preflight(client, "/store/k", origin: "http://anywhere.example")
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == "*")
        #expect(try Self.preflight(client, "/store/k", origin: "null").status == 204)
    }

    @Test func anyOriginWithATokenEchoesTheOrigin() throws {
        let server = try Self.server(origins: ["*"], token: true)
        let client = server.client()
        let refused = try client.send("GET", "/store/k", headers: [("Origin", "http://anywhere.example")])
        #expect(refused.status == 401)
        Self.expectCORS(refused, origin: "http://anywhere.example", "401 with * and a token")
        #expect(Self.list(refused, "Vary").contains("Origin"))
        let preflight = try Self.preflight(client, "/store/k", origin: "http://anywhere.example")
        #expect(preflight.header("Access-Control-Allow-Origin") == "http://anywhere.example")
    }

    /// Without `--cors-origin`: no CORS headers anywhere, and a plain
    /// `OPTIONS` is 204 with `Allow` on every endpoint.
    @Test func offUnlessConfiguredAndPlainOptionsAnswersAllow() throws {
        let server = try TestServer { $0.publicDirectory = Repository.path("Public") }
        let client = server.client()
        let origin = [("Origin", Self.app)]
        Self.expectNoCORS(try client.send("GET", "/store/k", headers: origin), "GET with CORS off")
        let preflight = try Self.preflight(client, "/store/k", origin: Self.app)
        Self.expectNoCORS(preflight, "preflight with CORS off")
        for (target, allow) in [("/store/k", ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"]),
                                ("/store/p/", ["GET", "HEAD", "POST", "DELETE", "OPTIONS"]),
                                ("/events", ["GET", "HEAD", "OPTIONS"]), ("/healthz", ["GET", "HEAD", "OPTIONS"]),
                                ("/metrics", ["GET", "HEAD", "OPTIONS"]), ("/", ["GET", "HEAD", "OPTIONS"])] {
            let answer = try client.send("OPTIONS", target)
            #expect(answer.status == 204, "OPTIONS \(target): \(answer.status)")
            #expect(Self.list(answer, "Allow") == allow, "OPTIONS \(target)")
            Self.expectNoCORS(answer, "OPTIONS \(target)")
        }
        let refused = try client.send("DELETE", "/metrics")
        ProtocolWire.expectError(refused, 405, "method_not_allowed")
        #expect(Self.list(refused, "Allow") == ["GET", "HEAD", "OPTIONS"])
    }

    @Test func malformedOriginsAreRefusedAtStart() throws {
        for bad in [["app.example"], ["ftp://app.example"], ["http://app.example/path"], ["http://"], [""]] {
            #expect(throws: ConfigurationError.self, "origins \(bad)") { _ = try TestServer { $0.corsOrigins = bad } }
        }
        #expect(CORS.normalized("HTTP://App.Example:8080/") == "http://app.example:8080")
        #expect(CORS.normalized("https://[::1]:3000") == "https://[::1]:3000")
    }
}
