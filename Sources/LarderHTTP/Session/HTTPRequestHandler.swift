/// What the application does with a request's body.
public enum HTTPBodyAction {
    /// The body is not wanted: it is skipped after the answer, or the
    /// connection is closed when the body is large or `Expect: 100-continue`
    /// was sent (so an early answer never waits for an upload).
    case ignore
    /// Stream the body into this sink (after `100 Continue` if asked for).
    case receive(HTTPRequestBodySink)
    /// This is the answer, given by returning it: what `respond` and then
    /// `.ignore` would do, without handing the response through the
    /// responder's lock. Only with the responder the connection made
    /// (`HTTPResponder.isConnections`): a wrapped one's middleware must see
    /// the answer, so it is answered through.
    case answer(HTTPResponse)
}

/// Receives a request body piece by piece, on the connection's loop.
public protocol HTTPRequestBodySink: AnyObject {
    /// A piece of the body. Throwing ends the request: an `HTTPError` is sent
    /// as is, anything else as 500, and the connection closes.
    func write(_ chunk: UnsafeRawBufferPointer) throws
    /// The body is complete: answer through the request's responder, now or later.
    func finish()
    /// The request ended early (error, disconnect, timeout).
    func abort()
}

/// The application side of the server, called on the connection's loop
/// with each request head and the responder that answers it. The handler
/// answers through `responder` at once (before returning: the common case,
/// with no thread hop) or later from any thread. It must not block for long:
/// disk I/O is fine, waiting on other requests is not (answer later instead).
public protocol HTTPRequestHandler: Sendable {
    func handle(_ request: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction
    /// The largest body this request may have when it is not the server's
    /// `maxBodyBytes` (nil: that limit). Asked before `handle`, and only for
    /// a chunked body or a `Content-Length` over the server's limit, so
    /// ordinary requests never pay for it.
    func maxBodyBytes(for request: HTTPRequestHead) -> Int64?
    /// Who is told of the answer to a request the connection refuses
    /// before `handle` (a `Content-Length` over the body limit), as
    /// `HTTPResponder.observe(with:)` names one for the others.
    func answerObserver(forRefused request: HTTPRequestHead) -> (any HTTPAnswerObserver)?
}

extension HTTPRequestHandler {
    public func maxBodyBytes(for request: HTTPRequestHead) -> Int64? { nil }
    public func answerObserver(forRefused request: HTTPRequestHead) -> (any HTTPAnswerObserver)? { nil }
}
