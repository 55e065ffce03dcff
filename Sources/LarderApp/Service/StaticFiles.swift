import LarderHTTP
import LarderRouting
import LarderViewer

/// Serves the browser viewer: `/` and `/viewer/` are `index.html`,
/// `/viewer/<path>` any other file. Every answer carries the file's strong
/// ETag and `Cache-Control: no-cache`: the browser revalidates each time, so
/// a new build (or an edit under `--public-dir`) shows at once, and an
/// unchanged file costs a 304 with no body.
struct StaticFiles: Route {
    /// Where the route table mounts it.
    static let paths: [RouteTable.Match] = [.exact("/"), .exact("/viewer"), .prefix("/viewer/")]

    let files: ViewerFiles

    func handle(_ route: RouteRequest) throws(HTTPError) -> RouteAnswer {
        if let answer = try ReadOnlyEndpoint.check(route, "the viewer is read-only") { return answer }
        let path = route.head.path
        let relative = path == "/" || path == "/viewer" ? "" : path.dropFirst("/viewer/".count)
        guard let safe = ViewerPath.normalized(relative), let file = files.file(safe) else {
            throw HTTPError(.notFound, .notFound, "no such file in the viewer")
        }
        let headers = [("ETag", file.entityTag), ("Cache-Control", "no-cache")]
        if IfNoneMatch.matches(file.entityTag, route.head.headers.values("If-None-Match")) {
            return .respond(HTTPResponse(status: .notModified, headers: headers))
        }
        return .respond(HTTPResponse(status: .ok, headers: [("Content-Type", file.contentType)] + headers, body: .bytes(file.bytes)))
    }
}
