import LarderHTTP
#if canImport(Glibc)
import Glibc
#endif

/// Maps paths to routes, runs the middleware chain around the matched one,
/// and turns what a route answers into what the HTTP layer understands:
/// the one routing core of both faces (the Larder API's tables, the S3
/// listener's), each an `HTTPServer`'s handler.
///
/// A class, immutable after `init`: a request reaches it through one
/// reference (the server's handler, a namespace's world), where a struct of
/// five arrays was copied, a retain and a release each, wherever it was
/// captured or read out of another object.
public final class RouteTable: HTTPRequestHandler {
    public enum Match: Sendable {
        /// This path exactly.
        case exact(String)
        /// Paths that start with this; `rest` is what follows.
        case prefix(String)

        /// What follows the match in `path` (empty for `exact`); nil when it does not match.
        /// Compared byte by byte: the HTTP layer percent-encodes every byte
        /// outside ASCII, so a path is ASCII and bytes are characters (and a
        /// `Character` comparison costs a route lookup thousands of instructions).
        public func rest(of path: Substring) -> Substring? {
            switch self {
            case .exact(let p):
                return Self.starts(path, with: p, wholly: true) ? path[path.endIndex...] : nil
            case .prefix(let p):
                guard Self.starts(path, with: p, wholly: false) else { return nil }
                return path[path.utf8.index(path.startIndex, offsetBy: p.utf8.count)...]
            }
        }

        /// Whether `path` starts with the bytes of `pattern` (and has no
        /// more when `wholly`): lengths first, then one `memcmp` over both
        /// strings' contiguous UTF-8.
        private static func starts(_ path: Substring, with pattern: String, wholly: Bool) -> Bool {
            let (bytes, wanted) = (path.utf8, pattern.utf8)
            let (have, need) = (bytes.count, wanted.count)
            guard wholly ? have == need : have >= need else { return false }
            if need == 0 { return true }
            let compared = bytes.withContiguousStorageIfAvailable { a in
                wanted.withContiguousStorageIfAvailable { b in memcmp(a.baseAddress!, b.baseAddress!, need) == 0 }
            }
            return (compared ?? nil) ?? bytes.starts(with: wanted)
        }
    }

    private let entries: [(match: Match, route: any Route)]
    /// The entries' routes alone (taking one from `entries` copies its match too).
    private let routes: [any Route]
    /// Each entry's path as bytes, and whether it must match exactly:
    /// `route(for:)` compares them with the request's path in place.
    private let patterns: [(bytes: [UInt8], exact: Bool)]
    private let middleware: [any LarderMiddleware]
    /// The table's first step for every request, before its middleware
    /// (the Larder API's server table: the journal and the namespaces);
    /// nil: none.
    private let intake: (any RequestIntake)?

    public init(_ entries: [(Match, any Route)], middleware: [any LarderMiddleware], intake: (any RequestIntake)? = nil) {
        self.entries = entries.map { (match: $0.0, route: $0.1) }
        self.routes = entries.map(\.1)
        self.patterns = entries.map { entry in
            switch entry.0 {
            case .exact(let p): (Array(p.utf8), true)
            case .prefix(let p): (Array(p.utf8), false)
            }
        }
        self.middleware = middleware
        self.intake = intake
    }

    /// Whether a request runs through middleware before its route (a
    /// namespace's table has its own fault rules with `--allow-faults`).
    public var hasMiddleware: Bool { !middleware.isEmpty }

    public func handle(_ head: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
        let path = head.path
        // The intake runs once, here (a `/ns/<name>/...` request's namespace
        // is looked up by it): the chain below runs once for the whole
        // request, and a mount routes the rest.
        let mount = intake?.admit(head, path: path, responder)
        if middleware.isEmpty { return dispatch(head, path: path, mount, responder) }
        return run(RouteRequest(head: head, responder: responder, rest: "", mount: mount), from: 0)
    }

    /// Middleware `index` and the rest of the chain after it; the route last.
    private func run(_ request: RouteRequest, from index: Int) -> HTTPBodyAction {
        if index < middleware.count {
            return middleware[index].handle(request) { run($0, from: index + 1) }
        }
        return dispatch(request.head, path: request.head.path, request.mount, request.responder)
    }

    /// A request the intake mounted goes to its mount; any other is routed here.
    private func dispatch(_ head: HTTPRequestHead, path: Substring, _ mount: Mount?, _ responder: HTTPResponder) -> HTTPBodyAction {
        if let mount { return mount.handler.serve(head, path: path, prefixBytes: mount.prefixBytes, responder) }
        return answer(head, path: path, from: 0, responder)
    }

    /// A mounted request, this table's middleware skipped: routed by what
    /// follows the first `prefixBytes` bytes of `path` (`/store/k` of
    /// `/ns/w3/store/k`, not cut out: the lookup reads the bytes in place).
    /// The head keeps the path as sent: routes read `RouteRequest.rest` for
    /// their part of the path, never `head.path`.
    @inline(__always)
    public func dispatch(_ head: HTTPRequestHead, path: Substring, from prefixBytes: Int, _ responder: HTTPResponder) -> HTTPBodyAction {
        answer(head, path: path, from: prefixBytes, responder)
    }

    /// The route for `path` after its first `offset` bytes answers the request.
    @inline(__always)
    private func answer(_ head: HTTPRequestHead, path: Substring, from offset: Int, _ responder: HTTPResponder) -> HTTPBodyAction {
        guard let (route, rest) = route(for: path, from: offset) else {
            let inner = offset == 0 ? path : path[path.utf8.index(path.startIndex, offsetBy: offset)...]
            responder.respond(HTTPError(.notFound, .notFound, "no endpoint at \(inner); values live under /store/").response)
            return .ignore
        }
        do {
            switch try route.handle(RouteRequest(head: head, responder: responder, rest: rest)) {
            case .respond(let response):
                // Returned to the connection when no middleware wrapped the
                // responder: one lock and no copies of the answer fewer.
                if responder.isConnections { return .answer(response) }
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

    /// A request refused before it reached `handle` is told of too: to
    /// whom the intake names, else the route's.
    public func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)? {
        if let intake { return intake.answerObserver(forRefused: head) }
        guard let (route, _) = route(for: head.path) else { return nil }
        return route.answerObserver(forRefused: head)
    }

    /// The limit of the route the path goes to (a route that hands
    /// requests on answers for the route they go to).
    public func maxBodyBytes(for head: HTTPRequestHead) -> Int64? {
        guard let (route, rest) = route(for: head.path) else { return nil }
        return route.maxBodyBytes(rest: rest)
    }

    /// The first entry whose path matches `path` after its first `offset`
    /// bytes (0; a namespace's table: its prefix's), and the rest of `path`
    /// after it. The path's bytes are read in place, once, and compared
    /// with each pattern by length and `memcmp` (a lookup is part of every
    /// request). `offset` must be within the path, on a character boundary.
    public func route(for path: Substring, from offset: Int = 0) -> (any Route, Substring)? {
        // The closure captures the patterns alone: capturing `self` copies
        // the whole table (a retain and a release of each of its arrays).
        let patterns = self.patterns
        let found = path.utf8.withContiguousStorageIfAvailable { bytes -> (index: Int, length: Int)? in
            let count = bytes.count - offset
            for (index, pattern) in patterns.enumerated() {
                let n = pattern.bytes.count
                if pattern.exact ? count != n : count < n { continue }
                if n == 0 || pattern.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress! + offset, n) == 0 }) {
                    return (index, n)
                }
            }
            return nil
        }
        guard let found else {
            let inner = path[path.utf8.index(path.startIndex, offsetBy: offset)...]
            for entry in entries {  // a path without contiguous storage (never from the parser)
                if let rest = entry.match.rest(of: inner) { return (entry.route, rest) }
            }
            return nil
        }
        guard let (index, length) = found else { return nil }
        return (routes[index], path[path.utf8.index(path.startIndex, offsetBy: offset + length)...])
    }
}
