import LarderHTTP
import LarderRouting

/// `/faults` on a server started without `--allow-faults`: 404, as API.md
/// says, but naming the flag, so a test helper's `fault()` against a
/// sidecar started without it says what to change rather than "no endpoint".
struct FaultsOffRoute: Route {
    static let message = "fault injection is off on this server: start larder with --allow-faults (or LARDER_ALLOW_FAULTS=1) to use /faults"

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        throw HTTPError(.notFound, .notFound, Self.message)
    }
}
