import LarderHTTP
import LarderRouting

/// How a request under `/ns/<name>/` of a namespace that exists reaches
/// its routes: the server's middleware chain (CORS, auth, its fault rules)
/// has run for it, once; then, before its own route lookup, the server's
/// table asks here; the name is read out of the path in place, looked up,
/// and the rest of the path routed by the namespace's own table. So one
/// route lookup (the inner path's), no second pass through the server's
/// middleware, and no copy of the head (unless the namespace has
/// middleware of its own: its fault rules, with `--allow-faults`).
/// A namespaced GET costs ~8 % more instructions than the same one in the
/// default namespace (18,466 against 17,154 on 2026-11-29,
/// `Benchmarks/callgrind.sh` with `NAMESPACE=w1`); most of that is hashing
/// the name and parsing the longer target.
extension Namespaces {
    /// The namespace `<name>` when `path` is `/ns/<name>/...` and that
    /// namespace exists, with the bytes of `path` that name it; nil for any
    /// other path, which the server's table routes as usual
    /// (`NamespaceRoute` makes a new namespace, or refuses the name or the path).
    func existing(in path: Substring) -> (world: NamespaceWorld, prefixBytes: Int)? {
        guard let (name, prefixBytes) = NamespacePath.split(path), let world = existing(name) else { return nil }
        return (world, prefixBytes)
    }
}

extension NamespaceWorld {
    /// Serves the request whose path, less its first `prefixBytes` bytes
    /// (`/ns/w3`), is the path inside this namespace (`/store/k`), with
    /// this namespace's routes.
    package func serve(_ head: HTTPRequestHead, path: Substring, prefixBytes: Int, _ responder: HTTPResponder) -> HTTPBodyAction {
        var responder = responder
        if head.method == .post {
            // A created key's `Location` is a path of this namespace.
            let base = NamespacePath.prefix + name
            responder = responder.intercept { response, next in
                var response = response
                if let i = response.headers.firstIndex(where: { $0.0 == "Location" }), response.headers[i].1.hasPrefix("/") {
                    response.headers[i].1 = base + response.headers[i].1
                }
                next.respond(response)
            }
        }
        // The namespace's fault rules read the path inside it: they get a
        // head whose path is that (a copy, only with `--allow-faults`).
        guard !table.hasMiddleware else {
            return table.handle(head.droppingPathPrefix(bytes: prefixBytes), responder)
        }
        return table.dispatch(head, path: path, from: prefixBytes, responder)
    }
}
