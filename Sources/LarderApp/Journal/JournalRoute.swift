import LarderHTTP
import LarderRouting
import LarderModel

/// `/journal` of a namespace: `GET` the recorded requests (filters,
/// `since`, the `wait` long poll: `JournalFilter`), `DELETE` empties it.
/// With `--journal 0` there is none: 404 saying so.
struct JournalRoute: Route {
    let journal: RequestJournal?

    static let methods = "GET, HEAD, DELETE, OPTIONS"

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        guard let journal else {
            throw HTTPError(.notFound, .notFound, "the request journal is off (--journal 0)")
        }
        switch request.method {
        case .get, .head:
            var filter = try JournalFilter(request.head.query, capacity: journal.capacity)
            if request.method == .head { filter.waitSeconds = 0 }
            journal.answer(filter, through: request.responder)
            return .later
        case .delete:
            journal.clear()
            return .respond(HTTPResponse(status: .noContent))
        case .options:
            return .respond(.allow(Self.methods))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed, "\(request.method) is not allowed on /journal",
                            headers: [("Allow", Self.methods)])
        }
    }
}
