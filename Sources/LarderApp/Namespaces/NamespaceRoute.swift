import LarderHTTP
import LarderRouting
import LarderModel

/// `/ns/...`: the namespaces. `GET /ns/` lists them, `DELETE /ns/` drops
/// them all, `DELETE /ns/<name>` drops one, and anything under
/// `/ns/<name>/` is handed, with `/ns/<name>` taken off its path, to that
/// namespace's route table: the same routes the default namespace has,
/// over its own store, hub and fault rules. Auth, CORS and the server's
/// own middleware ran before this route, as for any other.
///
/// A request for a namespace that exists does not get here: the server's
/// table mounts it on its world (`NamespaceWorld.serve`). This route makes new
/// namespaces, refuses bad names and paths, and lists and drops them.
struct NamespaceRoute: Route {
    /// nil: the store has no namespaces (every `/ns/` path is a 501).
    let namespaces: Namespaces?
    /// The routes a namespace serves (the default namespace's API, with no
    /// middleware): a request for another path is a 404 that makes no
    /// namespace, and one for a path it serves has that route's body limit.
    let routes: RouteTable

    static let listMethods = "GET, HEAD, DELETE, OPTIONS"
    static let namespaceMethods = "DELETE, OPTIONS"

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        guard let namespaces else {
            throw HTTPError(.notImplemented, .namespacesUnsupported, "this server's store has no namespaces")
        }
        // `rest` follows `/ns/`; `/ns` alone (an exact match: no rest) is the list too.
        let rest = request.rest
        guard let slash = rest.utf8.firstIndex(of: UInt8(ascii: "/")) else {
            return rest.isEmpty ? try all(namespaces, request) : try one(NamespaceName.check(rest), namespaces, request)
        }
        // A namespace that exists had its name checked when it was made.
        let given = rest[..<slash]
        let world: NamespaceWorld
        if given.utf8.count <= NamespaceName.maxBytes, let open = namespaces.existing(String(given)) {
            world = open  // made since the server's table looked
        } else {
            let name = try NamespaceName.check(given)
            let inner = rest[slash...]
            guard routes.route(for: inner) != nil else {
                throw HTTPError(.notFound, .notFound, "no endpoint at \(inner) in a namespace; values live under /ns/\(name)/store/")
            }
            world = try namespaces.world(name)
        }
        let prefixBytes = request.head.path.utf8.count - rest[slash...].utf8.count
        // Its journal, now that it exists (the journal's attachment looked before it did).
        if let journal = world.journal {
            JournalAttachment.attach(journal, to: request.responder, path: request.head.path, from: prefixBytes)
        }
        switch world.serve(request.head, path: request.head.path, prefixBytes: prefixBytes, request.responder) {
        case .ignore: return .later
        case .receive(let sink): return .receiveBody(sink)
        case .answer(let response): return .respond(response)
        }
    }

    /// A namespace's paths (`/ns/<name>/snapshot`) have the limits of the
    /// same paths outside (every namespace has the same routes).
    func maxBodyBytes(rest: Substring) -> Int64? {
        guard let inner = NamespacePath.inner(afterPrefix: rest), let (route, innerRest) = routes.route(for: inner) else { return nil }
        return route.maxBodyBytes(rest: innerRest)
    }

    /// `/ns/`: the list, or every namespace dropped.
    private func all(_ namespaces: Namespaces, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        switch request.method {
        case .get, .head:
            return .respond(.json(.ok, namespaces.list(), headers: [("Cache-Control", "no-store")]))
        case .delete:
            _ = namespaces.dropAll()
            return .respond(HTTPResponse(status: .noContent))
        case .options:
            return .respond(.allow(Self.listMethods))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed, "/ns/ is listed with GET and emptied with DELETE",
                            headers: [("Allow", Self.listMethods)])
        }
    }

    /// `/ns/<name>`: the namespace dropped.
    private func one(_ name: String, _ namespaces: Namespaces, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        switch request.method {
        case .delete:
            guard namespaces.drop(name) else { throw HTTPError(.notFound, .notFound, "no namespace \(name)") }
            return .respond(HTTPResponse(status: .noContent))
        case .options:
            return .respond(.allow(Self.namespaceMethods))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed,
                            "/ns/\(name) is dropped with DELETE; its API is under /ns/\(name)/",
                            headers: [("Allow", Self.namespaceMethods)])
        }
    }
}
