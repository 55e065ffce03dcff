import Foundation
import LarderHTTP
import LarderSupport

/// Serves the browser viewer from `Public/`: `/` is `index.html`,
/// `/viewer/<path>` any file below it.
struct StaticFiles: Route {
    /// Where the route table mounts it.
    static let paths: [RouteTable.Match] = [.exact("/"), .exact("/viewer"), .prefix("/viewer/")]

    let directory: String

    func handle(_ route: RouteRequest) throws(HTTPError) -> RouteAnswer {
        if let answer = try ReadOnlyEndpoint.check(route, "the viewer is read-only") { return answer }
        let request = route.head
        let path = request.path
        var relative = path == "/" || path == "/viewer" || path == "/viewer/" ? "index.html" : String(path.dropFirst("/viewer/".count))
        if relative.hasSuffix("/") { relative += "index.html" }
        let segments = relative.split(separator: "/")
        guard !segments.contains(where: { $0 == ".." || $0 == "." || $0.hasPrefix(".") }) else {
            throw HTTPError(.notFound, .notFound, "no such file in the viewer")
        }
        let file = directory + "/" + segments.joined(separator: "/")
        guard let data = FileManager.default.contents(atPath: file) else {
            throw HTTPError(.notFound, .notFound, "no such file in the viewer")
        }
        return .respond(HTTPResponse(status: .ok, headers: [("Content-Type", Self.contentType(of: file))], body: .bytes(Array(data))))
    }

    static func contentType(of file: String) -> String { MediaType.forFileName(file) }
}
