import LarderHTTP
import LarderRouting
import LarderSupport

/// The module's name for the shared compare (its tests spell it unqualified).
typealias ConstantTime = LarderSupport.ConstantTime

/// `--token`: a request needs `Authorization: Bearer <token>` (RFC 6750),
/// else it is answered 401 before its body is read (no `100 Continue` is
/// sent; the HTTP layer skips a small body or closes the connection).
///
/// Open without a token: `/healthz` and the viewer's own files (`/`,
/// `/viewer`, `/viewer/...`). Everything else needs it, paths that match no
/// route included, so a 404 tells nothing about what exists. The decision
/// uses the same literal path the route table matches, so an open path can
/// only ever reach the health or viewer routes (their own mount points).
///
/// `/events` also takes the token as `?access_token=` (RFC 6750 section
/// 2.3), because a browser's `EventSource` cannot send headers; no other
/// endpoint does (a URL ends up in histories and logs; the access log
/// redacts the parameter everywhere). When both are sent, the header counts.
///
/// A CORS preflight never gets here: the CORS middleware, outside this one,
/// answers it (browsers send no credentials with a preflight).
struct TokenAuth: LarderMiddleware {
    static let realm = "larder"
    private let token: [UInt8]

    /// Fails for a token that cannot be sent in a header as it is: it must
    /// be visible ASCII without spaces (RFC 6750's b64token is a subset).
    init(token: String) throws(ConfigurationError) {
        let bytes = Array(token.utf8)
        guard !bytes.isEmpty else { throw ConfigurationError("the token is empty") }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw ConfigurationError("the token must be visible ASCII characters without spaces")
        }
        self.token = bytes
    }

    static let openPaths: [RouteTable.Match] = [.exact(HealthRoute.path)] + StaticFiles.paths

    static func isOpen(_ path: Substring) -> Bool {
        openPaths.contains { $0.rest(of: path) != nil }
    }

    enum Credential: Equatable {
        /// No bearer token at all (or another scheme): the challenge carries no error code.
        case missing
        case invalid
        case valid
    }

    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
        let head = request.head
        if Self.isOpen(head.path) { return next(request) }
        let credential = check(head)
        if credential == .valid { return next(request) }
        request.responder.respond(Self.unauthorized(credential))
        return .ignore
    }

    func check(_ head: HTTPRequestHead) -> Credential {
        if let field = head.headers.valueBytes("Authorization") {
            guard let given = Self.bearerToken(field) else { return .missing }
            return ConstantTime.equals(given, token) ? .valid : .invalid
        }
        guard head.path == "/events" || NamespacePath.inner(head.path) == "/events", head.query != nil,
              let given = (try? QueryParameters(head.query))?["access_token"] else { return .missing }
        return ConstantTime.equals(given.utf8, token) ? .valid : .invalid
    }

    /// The token of `Bearer <token>` (the scheme is case-insensitive);
    /// nil for another scheme or no token.
    static func bearerToken(_ field: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let scheme = "bearer".utf8
        guard field.count > scheme.count,
              zip(field, scheme).allSatisfy({ $0 | 0x20 == $1 }),
              field[field.startIndex + scheme.count] == UInt8(ascii: " ") else { return nil }
        var token = field.dropFirst(scheme.count)
        while token.first == UInt8(ascii: " ") { token = token.dropFirst() }
        while token.last == UInt8(ascii: " ") || token.last == UInt8(ascii: "\t") { token = token.dropLast() }
        return token.isEmpty ? nil : token
    }

    static func unauthorized(_ credential: Credential) -> HTTPResponse {
        let invalid = credential == .invalid
        let challenge = "Bearer realm=\"\(realm)\"" + (invalid ? ", error=\"invalid_token\"" : "")
        let message = invalid ? "the bearer token is not valid"
                              : "this endpoint needs Authorization: Bearer <token>"
        return HTTPError(.unauthorized, .unauthorized, message, headers: [("WWW-Authenticate", challenge)]).response
    }
}
