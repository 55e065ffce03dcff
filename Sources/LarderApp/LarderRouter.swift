import LarderHTTP
import LarderLog
import LarderStore

/// Routes each request to the store, the health check or the viewer.
struct LarderRouter: HTTPRequestHandler {
    let store: DiskStore
    let storeRoutes: StoreRoutes
    let staticFiles: StaticFiles?
    let logger: Logger

    init(store: DiskStore, publicDirectory: String?, logger: Logger) {
        self.store = store
        self.storeRoutes = StoreRoutes(store: store, logger: logger)
        self.staticFiles = publicDirectory.map(StaticFiles.init)
        self.logger = logger
    }

    func handle(_ request: HTTPRequestHead) -> HTTPHandlerAction {
        do throws(HTTPError) {
            let path = request.path
            if path.hasPrefix("/store/") {
                return try storeRoutes.handle(request, rest: path.dropFirst(7))
            }
            if path == "/store" {
                return try storeRoutes.handle(request, rest: "")
            }
            if path == "/healthz" {
                return .respond(try health(request))
            }
            if let staticFiles, path == "/" || path == "/viewer" || path.hasPrefix("/viewer/") {
                return .respond(try staticFiles.handle(request))
            }
            throw HTTPError(.notFound, "not_found", "no endpoint at \(path); values live under /store/")
        } catch {
            return .respond(error.response)
        }
    }

    private func health(_ request: HTTPRequestHead) throws(HTTPError) -> HTTPResponse {
        guard request.method == .get || request.method == .head else {
            throw HTTPError(.methodNotAllowed, "method_not_allowed", "use GET", headers: [("Allow", "GET, HEAD")])
        }
        do {
            try store.checkHealth()
        } catch {
            logger.error("health check failed: \(error)")
            throw HTTPError(.serviceUnavailable, "unhealthy", "the store cannot read and write: \(error)")
        }
        var response = HTTPResponse.json(.ok, "{\"status\":\"ok\"}")
        if request.method == .head {
            response.headers.append(("Content-Length", "15"))
            response.body = .empty
        }
        return response
    }
}
