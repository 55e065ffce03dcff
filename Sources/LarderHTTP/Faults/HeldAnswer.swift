import Dispatch
import LarderSupport

/// An answer waiting for its timer (a fault's delay): given or dropped
/// exactly once, whichever of the timer and the client's hang-up comes
/// first (a body stream must be closed exactly once). Here, in the HTTP
/// layer, because both faces' faults hold answers: the plain API's
/// (`FaultMiddleware`) and the S3 listener's.
///
/// `@unchecked Sendable`: the response is behind the mutex, and the timer is
/// only resumed (once, by `release`) and cancelled, which Dispatch allows
/// from any thread.
public final class HeldAnswer: @unchecked Sendable {
    /// Where held answers are released; the work per timer is a lock and a
    /// queue hop, so one serial queue serves any number of them.
    private static let timers = DispatchQueue(label: "larder.faults")

    private let response: Locked<HTTPResponse?>
    private let responder: HTTPResponder
    private let timer: DispatchSourceTimer

    private init(_ response: HTTPResponse, for responder: HTTPResponder) {
        self.response = Locked(response)
        self.responder = responder
        self.timer = DispatchSource.makeTimerSource(queue: Self.timers)
    }

    /// Gives `response` through `responder`, now or after `nanos`. While
    /// it is held the connection is parked as for a watch (no thread, no
    /// idle timeout).
    public static func give(_ response: HTTPResponse, through responder: HTTPResponder, after nanos: UInt64) {
        guard nanos > 0 else {
            responder.respond(response)
            return
        }
        // A watch's deadline answer (its 304) must not overtake the
        // route's answer held here.
        responder.dropDeadline()
        HeldAnswer(response, for: responder).release(after: nanos)
    }

    /// Starts the timer. Its handler keeps this object alive until it fires
    /// or is cancelled (cancelling releases the handler): nothing else holds it.
    private func release(after nanos: UInt64) {
        timer.schedule(deadline: .now() + .nanoseconds(Int(nanos)), leeway: .milliseconds(1))
        timer.setEventHandler { [self] in
            timer.cancel()
            if let r = take() { responder.respond(r) }
        }
        responder.whenCancelled { [self] in
            timer.cancel()
            take()?.discardBody()
        }
        timer.resume()
    }

    private func take() -> HTTPResponse? { response.withLock { r in defer { r = nil }; return r } }
}
