import LarderHTTP

/// Code that runs around every route, the request-body path included: a
/// PUT's 201 passes back through it like a GET's 200, and so does an answer
/// given minutes later (a watch). In callback form, like Hummingbird's
/// `RouterMiddleware`, with no async runtime:
///
/// - answer early (auth): respond through `request.responder` and return
///   `.ignore` without calling `next`, and the body is never read;
/// - see or change the final response (metrics, CORS, faults): replace
///   `request.responder` with `request.responder.intercept { ... }`, then call `next`.
public protocol LarderMiddleware: Sendable {
    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction
}
