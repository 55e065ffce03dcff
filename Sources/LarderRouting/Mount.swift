import LarderHTTP

/// A handler that serves a request whole, past the first bytes of its path
/// (the Larder API's namespace worlds: `/ns/<name>` off, the rest routed
/// by the namespace's own table).
public protocol PrefixedHandler: AnyObject, Sendable {
    /// Serves the request whose path, less its first `prefixBytes` bytes,
    /// is the path inside this handler.
    func serve(_ head: HTTPRequestHead, path: Substring, prefixBytes: Int, _ responder: HTTPResponder) -> HTTPBodyAction
}

/// Where a table's intake sends a request: to `handler`, past
/// `prefixBytes` bytes of its path, after the table's middleware.
public struct Mount: Sendable {
    public let handler: any PrefixedHandler
    public let prefixBytes: Int

    @inline(__always)
    public init(_ handler: any PrefixedHandler, prefixBytes: Int) {
        self.handler = handler
        self.prefixBytes = prefixBytes
    }
}

/// What a table does first with every request, before its middleware:
/// attaches what must see every answer (the Larder API: its namespace's
/// journal) and finds a mount that serves the request whole (an existing
/// namespace). A step of the table, not a link of the chain: it runs for
/// every request, and a link costs ~700 instructions of chain machinery
/// (Benchmarks/callgrind.sh). A class: the table holds it as one
/// reference (a struct in an existential is copied through its value
/// witnesses on every request, ~300 instructions).
public protocol RequestIntake: AnyObject, Sendable {
    /// nil: the table routes the request itself.
    func admit(_ head: HTTPRequestHead, path: Substring, _ responder: HTTPResponder) -> Mount?
    /// Who is told of the answer to a request the HTTP layer refuses
    /// before the table sees it; nil: ask the route.
    func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)?
}
