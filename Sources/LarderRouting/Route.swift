import LarderHTTP

/// A request as routes and middleware see it: the head, and the responder
/// that answers it (middleware may wrap it to see the final response).
public struct RouteRequest: Sendable {
    public let head: HTTPRequestHead
    public var responder: HTTPResponder
    /// The path after the route's prefix (still percent-encoded).
    public var rest: Substring
    /// Where the table's intake sent the request (the Larder API: the
    /// namespace of a request under `/ns/<name>/` that exists): found
    /// once, before the chain; the table goes straight to it after.
    var mount: Mount?

    public init(head: HTTPRequestHead, responder: HTTPResponder, rest: Substring) {
        self.head = head
        self.responder = responder
        self.rest = rest
    }

    init(head: HTTPRequestHead, responder: HTTPResponder, rest: Substring, mount: Mount?) {
        self.head = head
        self.responder = responder
        self.rest = rest
        self.mount = mount
    }

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
    /// server's (`--max-value-size`); nil for that one. `rest`: the path
    /// after the route's match (a route that hands requests on, as the
    /// namespaces' does, answers for the route they go to).
    func maxBodyBytes(rest: Substring) -> Int64?
    /// Who is told of the answer to a request the HTTP layer refuses
    /// before the route sees it (a body over the limit); nil: nobody.
    func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)?
}

extension Route {
    public func maxBodyBytes(rest: Substring) -> Int64? { nil }
    public func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)? { nil }
}

extension HTTPResponse {
    /// The answer to a plain `OPTIONS` (not a CORS preflight): 204 with the
    /// endpoint's methods, as nginx and S3 answer it.
    public static func allow(_ methods: String) -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [("Allow", methods)])
    }
}

/// The method check of the endpoints that are only read (the change feed,
/// health, metrics, the viewer's files).
public enum ReadOnlyEndpoint {
    public static let methods = "GET, HEAD, OPTIONS"

    /// nil for GET and HEAD (go on); the `OPTIONS` answer; else throws 405
    /// with `why` as the message.
    public static func check(_ request: RouteRequest, _ why: String) throws(HTTPError) -> RouteAnswer? {
        switch request.method {
        case .get, .head: return nil
        case .options: return .respond(.allow(methods))
        default: throw HTTPError(.methodNotAllowed, .methodNotAllowed, why, headers: [("Allow", methods)])
        }
    }
}
