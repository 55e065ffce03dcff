import LarderHTTP
import LarderRouting

/// `--cors-origin`: lets pages from the configured origins (or any, `*`)
/// call Larder from a browser. Off unless origins are configured.
///
/// - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`)
///   from an allowed origin is answered here, 204, before token auth (a
///   browser sends no credentials with it); from another origin, 403.
/// - Every other answer to an allowed origin carries
///   `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers`,
///   401s included, and pushed bodies (the `/events` stream) too: the
///   headers go on through `responder.intercept`, whichever path answers.
/// - A disallowed origin gets no CORS headers; the request itself is served
///   as usual (the browser withholds the answer from the page).
///
/// The allowed origin is echoed, with `Vary: Origin`, unless `*` is
/// configured without a token (then `*`, and the answer does not vary).
/// In echo mode every answer says `Vary: Origin`, those to requests without
/// one too, so a cache never hands one origin's answer to another.
struct CORS: LarderMiddleware {
    static let allowMethods = "GET, HEAD, PUT, PATCH, POST, DELETE, OPTIONS"
    static let allowHeaders = "Authorization, Content-Type, Content-Encoding, If-Match, If-None-Match, "
        + "If-Modified-Since, If-Unmodified-Since, If-Range, Range, Last-Event-ID"
    /// Every response header a page may want to read that is not safelisted
    /// already (Content-Type, Content-Length, Cache-Control, Last-Modified…
    /// are); `Larder-*` are all the server's own headers.
    static let exposeHeaders = "ETag, Location, Last-Modified, Content-Range, Content-Encoding, Accept-Ranges, Allow, "
        + "Retry-After, WWW-Authenticate, Larder-Expires, Larder-Source, Larder-Fault"
    /// Seconds a browser may cache a preflight (Chromium caps it at 7200).
    static let maxAge = "7200"

    private let anyOrigin: Bool
    /// Lowercased, as browsers serialize origins.
    private let origins: Set<String>
    /// Echo the request's origin (and vary on it) rather than answer `*`.
    private let echo: Bool

    /// `origins`: `*`, `null`, or `scheme://host[:port]` each (a trailing
    /// `/` is dropped). `tokenRequired`: answer the origin rather than `*`.
    init(origins: [String], tokenRequired: Bool) throws(ConfigurationError) {
        var set: Set<String> = []
        var any = false
        for raw in origins {
            guard let origin = Self.normalized(raw) else {
                throw ConfigurationError("--cors-origin '\(raw)' is not an origin: use scheme://host[:port], 'null' or '*'")
            }
            if origin == "*" { any = true } else { set.insert(origin) }
        }
        guard any || !set.isEmpty else { throw ConfigurationError("--cors-origin needs at least one origin") }
        anyOrigin = any
        self.origins = set
        echo = !any || tokenRequired
    }

    static func normalized(_ text: String) -> String? {
        var origin = text.trimmingSpaces.lowercased()
        if origin == "*" || origin == "null" { return origin }
        if origin.hasSuffix("/") { origin.removeLast() }
        guard let colon = origin.firstIndex(of: ":"), ["http", "https"].contains(origin[..<colon]),
              origin[colon...].hasPrefix("://") else { return nil }
        let authority = origin[origin.index(colon, offsetBy: 3)...]
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else { return nil }
        return origin
    }

    func isAllowed(_ origin: String) -> Bool {
        anyOrigin || origins.contains(origin.lowercased())
    }

    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
        let headers = request.head.headers
        let origin = headers["Origin"]
        if request.method == .options, let origin, headers.contains("Access-Control-Request-Method") {
            request.responder.respond(preflight(origin, requestedHeaders: headers["Access-Control-Request-Headers"]))
            return .ignore
        }
        let allowed = origin.map(isAllowed) ?? false
        guard allowed || echo else { return next(request) }
        var request = request
        let added = answerHeaders(allowed ? origin : nil)
        request.responder = request.responder.intercept { response, next in
            var response = response
            for (name, value) in added { Self.add(name, value, to: &response) }
            next.respond(response)
        }
        return next(request)
    }

    /// The headers an actual answer gets: for an allowed origin (nil: not
    /// allowed, or none sent), then `Vary: Origin` in echo mode.
    private func answerHeaders(_ origin: String?) -> [(String, String)] {
        var headers: [(String, String)] = []
        if let origin {
            headers.append(("Access-Control-Allow-Origin", echo ? origin : "*"))
            headers.append(("Access-Control-Expose-Headers", Self.exposeHeaders))
        }
        if echo { headers.append(("Vary", "Origin")) }
        return headers
    }

    private func preflight(_ origin: String, requestedHeaders: String?) -> HTTPResponse {
        guard isAllowed(origin) else {
            var response = HTTPError(.forbidden, .originNotAllowed, "the origin \(origin) may not call this server").response
            if echo { response.headers.append(("Vary", "Origin")) }
            return response
        }
        // The requested headers are echoed when they are a plain list of
        // field names (Larder ignores headers it does not know); else the fixed list.
        let allowHeaders = requestedHeaders.flatMap { Self.isFieldNameList($0) ? $0 : nil } ?? Self.allowHeaders
        var headers = [("Access-Control-Allow-Origin", echo ? origin : "*"),
                       ("Access-Control-Allow-Methods", Self.allowMethods),
                       ("Access-Control-Allow-Headers", allowHeaders),
                       ("Access-Control-Max-Age", Self.maxAge)]
        headers.append(("Vary", echo ? "Origin, Access-Control-Request-Headers" : "Access-Control-Request-Headers"))
        return HTTPResponse(status: .noContent, headers: headers)
    }

    static func isFieldNameList(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || c == 0x2D || c == 0x2C || c == 0x20 || c == 0x5F
        }
    }

    /// Adds a header; `Vary` joins an existing `Vary` field instead.
    private static func add(_ name: String, _ value: String, to response: inout HTTPResponse) {
        if name == "Vary" { response.expandHeaderBlock() }
        if name == "Vary", let i = response.headers.firstIndex(where: { $0.0.lowercased() == "vary" }) {
            response.headers[i].1 += ", " + value
        } else {
            response.headers.append((name, value))
        }
    }
}
