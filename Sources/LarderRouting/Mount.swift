import LarderHTTP

/// A handler that serves a request whole, past the first bytes of its path
/// (the Larder API's namespace worlds: `/ns/<name>` off, the rest routed
/// by the namespace's own table).
package protocol PrefixedHandler: AnyObject, Sendable {
    /// Serves the request whose path, less its first `prefixBytes` bytes,
    /// is the path inside this handler.
    func serve(_ head: HTTPRequestHead, path: Substring, prefixBytes: Int, _ responder: HTTPResponder) -> HTTPBodyAction
}

/// Where a table's intake sends a request: to `handler`, past
/// `prefixBytes` bytes of its path, after the table's middleware.
package struct Mount: Sendable {
    package let handler: any PrefixedHandler
    package let prefixBytes: Int

    @inline(__always)
    package init(_ handler: any PrefixedHandler, prefixBytes: Int) {
        self.handler = handler
        self.prefixBytes = prefixBytes
    }
}

/// What a table does first with every request, before its middleware:
/// attaches what must see every answer (the Larder API: its namespace's
/// journal) and finds a mount that serves the request whole (an existing
/// namespace). A step of the table, not a link of the chain: it runs for
/// every request, and a link costs ~700 instructions of chain machinery
/// (Benchmarks/callgrind.sh).
package protocol RequestIntake: Sendable {
    /// nil: the table routes the request itself.
    func admit(_ head: HTTPRequestHead, path: Substring, _ responder: HTTPResponder) -> Mount?
    /// Who is told of the answer to a request the HTTP layer refuses
    /// before the table sees it; nil: ask the route.
    func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)?
}
