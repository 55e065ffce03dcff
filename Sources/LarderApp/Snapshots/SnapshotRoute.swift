import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// `/snapshot`: `GET ?prefix=` streams every value under the prefix as
/// NDJSON (`SnapshotStream`, one `SnapshotLine` per key); `POST` restores
/// such a document (`SnapshotRestore`), `?replace=1` clearing the prefix
/// first. `?prefix=users` and `?prefix=users/` are the same whole-segment
/// prefix, as in listings; empty or absent is the whole store.
struct SnapshotRoute: Route {
    let store: any ValueStore
    /// `--max-value-size`: each restored value is held to it.
    let maxValueBytes: Int64
    let logger: Logger

    static let methods = "GET, HEAD, POST, OPTIONS"

    /// A snapshot holds many values, so its body is not held to the limit
    /// of one value; each value in it is.
    func maxBodyBytes(rest: Substring) -> Int64? { .max }

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let query = try QueryParameters(request.head.query)
        let prefix = try ErrorMapping.run(logger) { try StorePrefix(bytes: Array((query["prefix"] ?? "").utf8)) }
        switch request.method {
        case .get, .head:
            return .respond(HTTPResponse(status: .ok, headers: [("Content-Type", "application/x-ndjson"),
                                                                ("Cache-Control", "no-cache")],
                                         body: .unsizedStream(SnapshotStream(store: store, prefix: prefix, logger: logger))))
        case .post:
            let replace = try query.flag("replace")
            return .receiveBody(SnapshotRestore(store: store, prefix: prefix, replace: replace, maxValueBytes: maxValueBytes,
                                                responder: request.responder, logger: logger))
        case .options:
            return .respond(HTTPResponse(status: .noContent, headers: [("Allow", Self.methods)]))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed, "a snapshot is read with GET and restored with POST",
                            headers: [("Allow", Self.methods)])
        }
    }
}
