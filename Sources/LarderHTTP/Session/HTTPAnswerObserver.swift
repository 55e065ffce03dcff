/// Told of the answer a request got, on the connection's loop, before
/// any of it is written to the socket (so a client that has its answer
/// finds it recorded): what a request journal records. The
/// application sets one per request (`HTTPResponder.observe(with:)`);
/// the connection calls it with facts only it has exactly (the time since
/// the head, the body bytes it read) and the final response, after every
/// middleware.
public protocol HTTPAnswerObserver: AnyObject, Sendable {
    func answered(_ request: borrowing HTTPAnsweredRequest, with response: borrowing HTTPResponse)
}

/// What the connection knows of an answered request.
public struct HTTPAnsweredRequest: Sendable {
    public let method: HTTPMethod
    /// The target as sent.
    public let target: String
    public let version: HTTPVersion
    /// The request's head as it came: the request line and the header
    /// fields, each ending in CRLF (a reference to the parser's copy; one
    /// reference, not the parsed fields' two, as a journal keeps it).
    public let head: [UInt8]
    /// Request body bytes read by the time of the answer (the whole body,
    /// unless the answer came before it).
    public let bodyBytes: Int64
    /// From the request's head to this answer.
    public let nanos: UInt64
    /// Bytes of the answer's body that go out when it is sent in full
    /// (none for HEAD, a 204 or 304; 0 when only its stream knows: an
    /// event stream, a snapshot).
    public let responseBodyBytes: Int64
}
