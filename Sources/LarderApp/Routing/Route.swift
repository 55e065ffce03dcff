import LarderHTTP

/// A request as routes and middleware see it: the head, and the responder
/// that answers it (middleware may wrap it to see the final response).
public struct RouteRequest: Sendable {
    public let head: HTTPRequestHead
    public var responder: HTTPResponder
    /// The path after the route's prefix (still percent-encoded).
    public var rest: Substring
    /// The namespace of a request under `/ns/<name>/` that exists, with
    /// how many bytes of the path name it: looked up once, before the
    /// chain, by the server's table, which goes straight to it after.
    var namespace: (world: NamespaceWorld, prefixBytes: Int)?

    public var method: HTTPMethod { head.method }
}

/// What a route does with a request.
public enum RouteAnswer {
    /// The answer, now.
    case respond(HTTPResponse)
    /// Stream the body into this sink; it answers through the request's responder.
    case receiveBody(HTTPRequestBodySink)
    /// The route answers later through the request's responder.
    case later
}

/// One endpoint (or family of endpoints) of the route table. Routes throw
/// `HTTPError` for any answer that is an error.
public protocol Route: Sendable {
    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer
    /// The largest request body this route takes, when it is not the
    /// server's (`--max-value-size`); nil for that one.
    var maxBodyBytes: Int64? { get }
}

extension Route {
    public var maxBodyBytes: Int64? { nil }
}

extension HTTPResponse {
    /// The answer to a plain `OPTIONS` (not a CORS preflight): 204 with the
    /// endpoint's methods, as nginx and S3 answer it.
    static func allow(_ methods: String) -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [("Allow", methods)])
    }
}

/// The method check of the endpoints that are only read (the change feed,
/// health, metrics, the viewer's files).
enum ReadOnlyEndpoint {
    static let methods = "GET, HEAD, OPTIONS"

    /// nil for GET and HEAD (go on); the `OPTIONS` answer; else throws 405
    /// with `why` as the message.
    static func check(_ request: RouteRequest, _ why: String) throws(HTTPError) -> RouteAnswer? {
        switch request.method {
        case .get, .head: return nil
        case .options: return .respond(.allow(methods))
        default: throw HTTPError(.methodNotAllowed, .methodNotAllowed, why, headers: [("Allow", methods)])
        }
    }
}
