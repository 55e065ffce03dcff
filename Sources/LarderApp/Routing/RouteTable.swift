import LarderHTTP

/// Maps paths to routes, runs the middleware chain around the matched one,
/// and turns what a route answers into what the HTTP layer understands.
/// The HTTP server's only handler.
struct RouteTable: HTTPRequestHandler {
    enum Match: Sendable {
        /// This path exactly.
        case exact(String)
        /// Paths that start with this; `rest` is what follows.
        case prefix(String)

        /// What follows the match in `path` (empty for `exact`); nil when it does not match.
        /// Compared byte by byte: the HTTP layer percent-encodes every byte
        /// outside ASCII, so a path is ASCII and bytes are characters (and a
        /// `Character` comparison costs a route lookup thousands of instructions).
        func rest(of path: Substring) -> Substring? {
            switch self {
            case .exact(let p):
                return path.utf8.elementsEqual(p.utf8) ? path[path.endIndex...] : nil
            case .prefix(let p):
                let bytes = path.utf8
                var i = bytes.startIndex
                for b in p.utf8 {
                    guard i != bytes.endIndex, bytes[i] == b else { return nil }
                    bytes.formIndex(after: &i)
                }
                return path[i...]
            }
        }
    }

    private let entries: [(match: Match, route: any Route)]
    private let middleware: [any LarderMiddleware]

    init(_ entries: [(Match, any Route)], middleware: [any LarderMiddleware]) {
        self.entries = entries.map { (match: $0.0, route: $0.1) }
        self.middleware = middleware
    }

    func handle(_ head: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
        if middleware.isEmpty { return dispatch(head, responder) }
        return run(RouteRequest(head: head, responder: responder, rest: ""), from: 0)
    }

    /// Middleware `index` and the rest of the chain after it; the route last.
    private func run(_ request: RouteRequest, from index: Int) -> HTTPBodyAction {
        if index < middleware.count {
            return middleware[index].handle(request) { run($0, from: index + 1) }
        }
        return dispatch(request.head, request.responder)
    }

    private func dispatch(_ head: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
        let path = head.path
        guard let (route, rest) = route(for: path) else {
            responder.respond(HTTPError(.notFound, .notFound, "no endpoint at \(path); values live under /store/").response)
            return .ignore
        }
        do {
            switch try route.handle(RouteRequest(head: head, responder: responder, rest: rest)) {
            case .respond(let response):
                responder.respond(response)
                return .ignore
            case .receiveBody(let sink):
                return .receive(sink)
            case .later:
                return .ignore
            }
        } catch {
            responder.respond(error.response)
            return .ignore
        }
    }

    /// A namespace's paths (`/ns/<name>/snapshot`) have the limits of the
    /// same paths outside (every namespace has the same routes): the inner
    /// path is looked up only when the namespaces' route matched.
    func maxBodyBytes(for head: HTTPRequestHead) -> Int64? {
        guard let (route, rest) = route(for: head.path) else { return nil }
        if route is NamespaceRoute, let inner = NamespacePath.inner(afterPrefix: rest) {
            return self.route(for: inner)?.0.maxBodyBytes
        }
        return route.maxBodyBytes
    }

    private func route(for path: Substring) -> (any Route, Substring)? {
        for entry in entries {
            if let rest = entry.match.rest(of: path) { return (entry.route, rest) }
        }
        return nil
    }
}
