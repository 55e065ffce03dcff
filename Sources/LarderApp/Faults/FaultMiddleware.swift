import Dispatch
import LarderSupport
import LarderHTTP
import LarderRouting

/// Faults on purpose (`--allow-faults`): requests a `FaultBook` rule fires
/// for are answered with the rule's status instead of running the route,
/// and/or answered late, and/or suffer a fault of the network; every such
/// answer carries `Larder-Fault: <rule>`. Only on the chain when the flag
/// is set, so it costs nothing otherwise.
///
/// Faults of the network are decided here and acted out by the connection
/// (`HTTPResponse.networkFault`): every faulted request is still answered
/// through its responder, so middleware outside this one sees the final
/// response with its `Larder-Fault` header and its network fault.
/// - `drop: before` answers at once with a response the connection never
///   sends (`.reset(handled: false)`): the route does not run, the body is
///   not read;
/// - `drop: after` lets the route run to its answer (a write is stored
///   before the store acknowledges it, and the route answers only after)
///   and marks that answer `.reset(handled: true)`;
/// - `truncate` and `bytesPerSecond` mark the real answer; a paced
///   request's body is also read at the rate (`paceRequestBody`).
///
/// A delay holds the ANSWER, not the request: the route runs at once and
/// its answer is sent when the delay is over. The middleware has to return
/// the body action now, and `next` cannot be kept to run the route later;
/// so a delayed PUT's body is read and written as usual, and only its
/// acknowledgement is late (like a slow network on the way back, where a
/// client that gives up cannot know whether the write happened). A status
/// fault runs no route at all: nothing is read or written.
///
/// While an answer is held the connection is parked as for a watch (no
/// thread, no idle timeout); a `DispatchSourceTimer` on one shared queue
/// releases it. A client that hangs up meanwhile cancels the timer and the
/// held answer is dropped (its open file closed).
struct FaultMiddleware: LarderMiddleware {
    static let header = "Larder-Fault"

    let book: FaultBook

    func handle(_ request: RouteRequest, next: (RouteRequest) -> HTTPBodyAction) -> HTTPBodyAction {
        // `/faults` itself is never faulted: a rule must not lock its own
        // switch. A namespace's requests go by its own rules, not these.
        guard request.head.path != "/faults", NamespacePath.inner(request.head.path) == nil, let fault = book.decide(method: request.method, path: request.head.path) else {
            return next(request)
        }
        let tag = (Self.header, fault.name)
        if fault.network == .dropBefore {
            // Never sent: the connection is reset instead.
            var response = HTTPError(.serviceUnavailable, .faultInjected, "connection dropped by rule \(fault.name)",
                                     headers: [tag]).response
            response.networkFault = .reset(handled: false)
            Self.answer(request.responder, with: response, after: fault.delayNanos)
            return .ignore
        }
        let onAnswer = Self.networkFault(fault.network)
        if let code = fault.status {
            var response = HTTPError(Self.status(code), .faultInjected, "fault injected by rule \(fault.name)",
                                     headers: [tag]).response
            response.networkFault = onAnswer
            Self.answer(request.responder, with: response, after: fault.delayNanos)
            return .ignore
        }
        if case .pace(let rate)? = fault.network { request.responder.paceRequestBody(bytesPerSecond: rate) }
        var request = request
        let delay = fault.delayNanos
        request.responder = request.responder.intercept { response, next in
            var response = response
            response.headers.append(tag)
            if let onAnswer { response.networkFault = onAnswer }
            Self.answer(next, with: response, after: delay)
        }
        return next(request)
    }

    /// What the connection does with the answer a rule lets through.
    private static func networkFault(_ effect: FaultRule.NetworkEffect?) -> HTTPNetworkFault? {
        switch effect {
        case nil, .dropBefore?: nil
        case .dropAfter?: .reset(handled: true)
        case .truncate(let bytes)?: .truncate(bytes: bytes)
        case .pace(let rate)?: .pace(bytesPerSecond: rate)
        }
    }

    /// Gives `response` through `responder`, now or after `nanos`.
    private static func answer(_ responder: HTTPResponder, with response: HTTPResponse, after nanos: UInt64) {
        HeldAnswer.give(response, through: responder, after: nanos)
    }

    /// The status line for a rule's code.
    static func status(_ code: Int) -> HTTPStatus { HTTPStatus(code: code) }
}
