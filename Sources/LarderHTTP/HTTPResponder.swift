import Dispatch
import LarderSupport

/// Answers one request, at once or later, from any thread.
///
/// The connection creates one per request and hands it to the handler. An
/// answer given while the handler (or a body sink) is still running on the
/// connection's queue is picked up directly when it returns, with no thread
/// hop: the common case costs one uncontended lock. An answer given later
/// hops onto the connection's queue. Only the first answer counts.
///
/// Middleware wraps a responder with `intercept` to see or change the final
/// response, whichever path produced it (a GET, a PUT after its body, a
/// watch answered minutes later).
public final class HTTPResponder: @unchecked Sendable {
    /// Shared by a root responder and every responder derived from it.
    final class Shared: @unchecked Sendable {
        // Everything below is guarded by `lock`.
        let lock = Lock()
        /// The connection is inside a call into the application on its queue.
        var inline = false
        var answered = false
        /// The request ended without an answer (client gone, deadline, shutdown).
        var ended = false
        var stored: HTTPResponse?
        var cancelHandlers: [@Sendable () -> Void] = []
        /// The answer due at a deadline, and the responder it goes through
        /// (so middleware that wrapped it sees it like any other answer).
        var deadline: (nanos: UInt64, response: HTTPResponse, via: HTTPResponder)?
        /// Called on the connection's queue when an answer or deadline arrives later.
        let wake: @Sendable () -> Void

        init(wake: @escaping @Sendable () -> Void) { self.wake = wake }
    }

    let shared: Shared
    private let forward: (@Sendable (HTTPResponse) -> Void)?

    init(wake: @escaping @Sendable () -> Void) {
        shared = Shared(wake: wake)
        forward = nil
    }

    private init(shared: Shared, forward: @escaping @Sendable (HTTPResponse) -> Void) {
        self.shared = shared
        self.forward = forward
    }

    /// Sends `response` as the answer. Later calls are ignored (their
    /// bodies released).
    public func respond(_ response: HTTPResponse) {
        if let forward { forward(response); return }
        let hop: Bool? = shared.lock.withLock {
            guard !shared.answered && !shared.ended else { return nil }
            shared.answered = true
            shared.stored = response
            return !shared.inline
        }
        guard let hop else { response.discardBody(); return }
        if hop { shared.wake() }
    }

    /// A responder whose answers pass through `transform` before reaching
    /// this one; `transform` calls `next` with the response to send (now or
    /// later, from any thread).
    public func intercept(_ transform: @escaping @Sendable (_ response: HTTPResponse, _ next: HTTPResponder) -> Void) -> HTTPResponder {
        let next = self
        return HTTPResponder(shared: shared) { transform($0, next) }
    }

    /// Answers with `response` at `deadline` unless an answer comes first;
    /// until then the connection waits with no thread and no idle timeout.
    public func answer(at deadline: DispatchTime, with response: HTTPResponse) {
        let hop: Bool? = shared.lock.withLock {
            guard !shared.answered && !shared.ended else { return nil }
            shared.deadline = (deadline.uptimeNanoseconds, response, self)
            return !shared.inline
        }
        guard let hop else { response.discardBody(); return }
        if hop { shared.wake() }
    }

    /// Runs `handler` once if the request ends before an answer is given
    /// through `respond`: the client closed the connection, the deadline
    /// answer was sent, or the server is stopping. Runs at once if it has.
    public func whenCancelled(_ handler: @escaping @Sendable () -> Void) {
        let now: Bool = shared.lock.withLock {
            if shared.ended { return true }
            if !shared.answered { shared.cancelHandlers.append(handler) }
            return false
        }
        if now { handler() }
    }

    /// Whether an answer was given (or the request ended).
    public var isFinished: Bool { shared.lock.withLock { shared.answered || shared.ended } }

    // MARK: - The connection's side (on its queue)

    func beginInline() { shared.lock.withLock { shared.inline = true } }

    /// Ends an inline call; returns an answer given meanwhile.
    func endInline() -> HTTPResponse? {
        shared.lock.withLock {
            shared.inline = false
            defer { shared.stored = nil }
            return shared.stored
        }
    }

    /// An answer that arrived later, if any.
    func takeAnswer() -> HTTPResponse? {
        shared.lock.withLock {
            defer { shared.stored = nil }
            return shared.stored
        }
    }

    /// When the deadline answer is due, if one was set and no answer came.
    var deadlineNanos: UInt64? { shared.lock.withLock { shared.answered ? nil : shared.deadline?.nanos } }

    /// The deadline passed: runs the cancel handlers (the route stops
    /// waiting) and returns the deadline answer with the responder to give
    /// it through.
    func takeDeadline() -> (response: HTTPResponse, via: HTTPResponder)? {
        let (due, handlers): ((HTTPResponse, HTTPResponder)?, [@Sendable () -> Void]) = shared.lock.withLock {
            guard !shared.answered, !shared.ended, let d = shared.deadline else { return (nil, []) }
            shared.deadline = nil
            defer { shared.cancelHandlers = [] }
            return ((d.response, d.via), shared.cancelHandlers)
        }
        for h in handlers { h() }
        return due
    }

    /// The connection closed before an answer: runs the cancel handlers.
    func cancel() {
        let (handlers, dropped): ([@Sendable () -> Void], [HTTPResponse]) = shared.lock.withLock {
            var dropped: [HTTPResponse] = []
            if let s = shared.stored { dropped.append(s); shared.stored = nil }
            if let d = shared.deadline { dropped.append(d.response); shared.deadline = nil }
            guard !shared.ended else { return ([], dropped) }
            shared.ended = true
            defer { shared.cancelHandlers = [] }
            return (shared.answered ? [] : shared.cancelHandlers, dropped)
        }
        for r in dropped { r.discardBody() }
        for h in handlers { h() }
    }
}
