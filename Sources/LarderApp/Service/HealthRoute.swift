import LarderModel
import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSupport

/// `GET /healthz`: 200 when the store can read and write.
struct HealthRoute: Route {
    static let path = "/healthz"
    let store: any ValueStore
    let logger: Logger
    /// A health answer is about this moment: no cache may keep it (as `/metrics`).
    static let headers = [("Cache-Control", "no-store")]

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        if let answer = try ReadOnlyEndpoint.check(request, "use GET") { return answer }
        let logger = self.logger
        return try .after(store.checkHealth(), request.responder) { health throws(HTTPError) -> HTTPResponse in
            do {
                try health.get()
            } catch {
                logger.error("health check failed: \(error)")
                throw HTTPError(.serviceUnavailable, .unhealthy, "the store cannot read and write: \(error)",
                                headers: HealthRoute.headers)
            }
            return .json(.ok, HealthStatus.ok, headers: HealthRoute.headers)
        }
    }
}
