import LarderHTTP

/// Puts each request in its namespace's journal: the journal is made the
/// observer of the request's answer (`HTTPAnswerObserver`), so the
/// connection hands it the final answer, after every middleware (a CORS
/// preflight, a 401, a fault count too), with the time and the body bytes
/// it measured. Outermost on the server's chain; it costs a request no
/// allocation and no clock read of its own.
///
/// A request under `/ns/<name>/` goes to that namespace's journal; its
/// world, looked up here, rides on the request so the route table does not
/// look it up again. A request that makes its namespace is given its
/// journal by `NamespaceRoute`, once the namespace exists. Requests to
/// `/journal`, `/healthz`, `/metrics` and the viewer's files are not recorded.
struct JournalMiddleware: LarderMiddleware {
    /// The default namespace's journal.
    let journal: RequestJournal
    let namespaces: Namespaces?

    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
        let path = request.head.path
        guard let (name, prefixBytes) = NamespacePath.split(path) else {
            Self.attach(journal, to: request.responder, path: path.utf8)
            return next(request)
        }
        guard let world = namespaces?.existing(name) else { return next(request) }
        var request = request
        request.namespace = (world, prefixBytes)
        if let journal = world.journal {
            Self.attach(journal, to: request.responder, path: path.utf8.dropFirst(prefixBytes))
        }
        return next(request)
    }

    /// Makes `journal` the observer of the answer, unless `path` (inside
    /// the namespace) is one that is not recorded.
    static func attach(_ journal: RequestJournal, to responder: HTTPResponder, path: Substring.UTF8View) {
        if isRecorded(path) { responder.observe(with: journal) }
    }

    /// Whether requests to this path (inside its namespace) are recorded:
    /// not the journal's own, nor health checks, scrapes and the viewer's files.
    static func isRecorded(_ path: Substring.UTF8View) -> Bool {
        // Store requests, the common case, are decided by their second byte.
        var bytes = path.makeIterator()
        guard bytes.next() == UInt8(ascii: "/") else { return true }
        switch bytes.next() {
        case UInt8(ascii: "s")?: return true
        case nil: return false                                    // `/`: the viewer
        case UInt8(ascii: "j")?: return !path.elementsEqual("/journal".utf8)
        case UInt8(ascii: "h")?: return !path.elementsEqual("/healthz".utf8)
        case UInt8(ascii: "m")?: return !path.elementsEqual("/metrics".utf8)
        case UInt8(ascii: "v")?: return !(path.elementsEqual("/viewer".utf8) || path.starts(with: "/viewer/".utf8))
        default: return true
        }
    }
}
