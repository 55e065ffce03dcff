import Dispatch
import Synchronization
import LarderSupport

/// Answers one request, at once or later, from any thread.
///
/// The connection creates one per request and hands it to the handler. An
/// answer given while the handler (or a body sink) is still running on the
/// connection's loop is picked up directly when it returns, with no thread
/// hop: the common case costs one uncontended lock. An answer given later
/// hops onto the connection's loop. Only the first answer counts.
///
/// Middleware wraps a responder with `intercept` to see or change the final
/// response, whichever path produced it (a GET, a PUT after its body, a
/// watch answered minutes later).
public final class HTTPResponder: Sendable {
    struct State {
        /// The connection is inside a call into the application on its
        /// queue. True from creation: a responder is made just before the
        /// handler is called.
        var inline = true
        var answered = false
        /// The request ended without an answer (client gone, deadline, shutdown).
        var ended = false
        var stored: HTTPResponse?
        var cancelHandlers: [@Sendable () -> Void] = []
        /// The answer due at a deadline, and the responder it goes through
        /// (so middleware that wrapped it sees it like any other answer).
        var deadline: (nanos: UInt64, response: HTTPResponse, via: HTTPResponder)?
        /// The responder made last by `intercept`: the one the route was
        /// handed, at the end of the middleware chain. Weak: whoever answers
        /// (a route, a body sink) keeps it.
        var innermost = WeakResponder()
    }

    struct WeakResponder { weak var value: HTTPResponder? }

    /// The responder the connection made; derived ones forward to it, and
    /// only its state is used. (One object per request in the common case.)
    private let root: HTTPResponder?
    private let forward: (@Sendable (HTTPResponse) -> Void)?
    /// The request's state, made with the connection's responder; derived
    /// ones share it (one allocation per request, not one per middleware
    /// that intercepts).
    let state: Locked<State>
    /// Told of the answer before it is sent; set while the request is
    /// handled, read when the answer is queued, both on the connection's
    /// queue, and only on the connection's responder (`shared`).
    nonisolated(unsafe) private var observer: (any HTTPAnswerObserver)?
    /// The connection, told on its loop when an answer or deadline arrives
    /// later. Strong (a weak reference costs more per request than the whole
    /// lock): the connection drops its responder when the request ends, and
    /// a route that keeps one does so only until the answer or cancellation.
    private let owner: (any HTTPResponderOwner)?
    /// Where `owner` is told (its connection's event loop).
    private let executor: (any ConnectionExecutor)?
    /// Read the request body at most this fast (a fault of the network);
    /// 0: as fast as it comes. Apart from `state`, so that the connection
    /// reads it only for a request whose body it is about to read: a GET
    /// pays nothing for it.
    private let bodyPace = Atomic<Int>(0)

    init(owner: any HTTPResponderOwner, executor: any ConnectionExecutor) {
        root = nil
        forward = nil
        state = Locked(State())
        self.owner = owner
        self.executor = executor
    }

    private init(root: HTTPResponder, forward: @escaping @Sendable (HTTPResponse) -> Void) {
        self.root = root
        self.forward = forward
        state = root.state
        self.owner = nil
        self.executor = nil
    }

    private var shared: HTTPResponder { root ?? self }

    /// Whether this is the responder the connection made, not one a
    /// middleware made with `intercept`: a handler given it may answer by
    /// returning `.answer`.
    public var isConnections: Bool { root == nil }

    private func wake() {
        guard let owner, let executor else { return }
        executor.execute { owner.answerArrived() }
    }

    /// Sends `response` as the answer. Later calls are ignored (their
    /// bodies released).
    public func respond(_ response: HTTPResponse) {
        if let forward { forward(response); return }
        let (hop, releasedDeadline): (Bool?, HTTPResponse?) = shared.state.withLock { st in
            guard !st.answered && !st.ended else { return (nil, nil) }
            st.answered = true
            st.stored = response
            // Nothing will cancel or time out now: let go of what those held
            // (the deadline answer refers back to a responder; handlers to routes).
            let released = st.deadline?.response
            st.deadline = nil
            st.cancelHandlers = []
            return (!st.inline, released)
        }
        releasedDeadline?.discardBody()
        guard let hop else { response.discardBody(); return }
        if hop { shared.wake() }
    }

    /// A responder whose answers pass through `transform` before reaching
    /// this one; `transform` calls `next` with the response to send (now or
    /// later, from any thread).
    public func intercept(_ transform: @escaping @Sendable (_ response: HTTPResponse, _ next: HTTPResponder) -> Void) -> HTTPResponder {
        let next = self
        let derived = HTTPResponder(root: shared) { transform($0, next) }
        shared.state.withLock { st in st.innermost.value = derived }
        return derived
    }

    /// Answers as the route would, through every middleware that wrapped
    /// this responder: for an answer the connection makes itself after the
    /// route took the request (an error in its body), which middleware
    /// must see like any other.
    func respondThroughChain(_ response: HTTPResponse) {
        let innermost = shared.state.withLock { st in st.innermost.value }
        (innermost ?? self).respond(response)
    }

    /// Answers with `response` at `deadline` unless an answer comes first;
    /// until then the connection waits with no thread and no idle timeout.
    public func answer(at deadline: DispatchTime, with response: HTTPResponse) {
        let hop: Bool? = shared.state.withLock { st in
            guard !st.answered && !st.ended else { return nil }
            st.deadline = (deadline.uptimeNanoseconds, response, self)
            return !st.inline
        }
        guard let hop else { response.discardBody(); return }
        if hop { shared.wake() }
    }

    /// An answer is on its way but held back (a fault's delay, in
    /// middleware): the deadline answer set with `answer(at:with:)` no
    /// longer applies, so it must not replace the held one when its time
    /// comes. The request stays parked until the held answer is given.
    public func dropDeadline() {
        let dropped: HTTPResponse? = shared.state.withLock { st in
            defer { st.deadline = nil }
            return st.deadline?.response
        }
        dropped?.discardBody()
    }

    /// Runs `handler` once if the request ends before an answer is given
    /// through `respond`: the client closed the connection, the deadline
    /// answer was sent, or the server is stopping. Runs at once if it has.
    public func whenCancelled(_ handler: @escaping @Sendable () -> Void) {
        let now: Bool = shared.state.withLock { st in
            if st.ended { return true }
            if !st.answered { st.cancelHandlers.append(handler) }
            return false
        }
        if now { handler() }
    }

    /// Reads this request's body at most `bytesPerSecond` (a fault of the
    /// network, `--allow-faults`): the connection takes it in timed slices
    /// and holds the socket's reading in between, with no thread waiting.
    /// Only while the handler runs (the connection looks once it returns,
    /// before reading the body).
    public func paceRequestBody(bytesPerSecond: Int) {
        shared.bodyPace.store(max(1, bytesPerSecond), ordering: .relaxed)
    }

    /// `observer` is told of the answer just before it is sent (replacing
    /// one set before; nil: no one is). Only while the request is being handled, on the
    /// connection's loop: from middleware or a route, before they return.
    public func observe(with observer: (any HTTPAnswerObserver)?) {
        shared.observer = observer
    }

    /// Ready for the connection's next request: the same object with the
    /// state of a new one, which saves the three allocations of a new
    /// responder (and their release) on every request. Only for the
    /// connection's own responder, once no one else holds it (the
    /// connection checks `isKnownUniquelyReferenced`): no route, body sink,
    /// middleware or derived responder can then see it change.
    func resetForNextRequest() {
        precondition(root == nil, "only the connection's responder is reused")
        state.withLock { $0 = State() }
        observer = nil
        bodyPace.store(0, ordering: .relaxed)
    }

    /// The observer of the answer (the connection's side).
    var answerObserver: (any HTTPAnswerObserver)? { shared.observer }

    /// Whether an answer was given (or the request ended).
    public var isFinished: Bool { shared.state.withLock { st in st.answered || st.ended } }

    // MARK: - The connection's side (on its loop)

    func beginInline() { shared.state.withLock { st in st.inline = true } }

    /// Ends an inline call whose handler returned its answer (`.answer`):
    /// the request counts as answered, as with `respond`, without the
    /// response being stored and taken back. False when an answer was given
    /// or the request ended before (the returned one is then not sent).
    func endInline(answeredWith response: HTTPResponse) -> Bool {
        // Most requests set no deadline and no cancel handler: their state
        // is left as it is, with no optional response made or destroyed
        // (each costs a call into the runtime's generic destroy).
        let (taken, hadDeadline): (Bool, Bool) = state.withLock { st in
            st.inline = false
            guard !st.answered && !st.ended else { return (false, false) }
            st.answered = true
            if !st.cancelHandlers.isEmpty { st.cancelHandlers = [] }
            return (true, st.deadline != nil)
        }
        if hadDeadline { dropDeadline() }
        return taken
    }

    /// Ends an inline call; returns an answer given meanwhile.
    func endInline() -> HTTPResponse? {
        shared.state.withLock { st in
            st.inline = false
            defer { st.stored = nil }
            return st.stored
        }
    }

    /// The rate the request body is to be read at (0: unpaced), as the
    /// handler set it with `paceRequestBody` (on this loop, so relaxed).
    var bodyBytesPerSecond: Int { shared.bodyPace.load(ordering: .relaxed) }

    /// An answer that arrived later, if any.
    func takeAnswer() -> HTTPResponse? {
        shared.state.withLock { st in
            defer { st.stored = nil }
            return st.stored
        }
    }

    /// When the deadline answer is due, if one was set and no answer came.
    var deadlineNanos: UInt64? { shared.state.withLock { st in st.answered ? nil : st.deadline?.nanos } }

    /// The deadline passed: runs the cancel handlers (the route stops
    /// waiting) and returns the deadline answer with the responder to give
    /// it through.
    func takeDeadline() -> (response: HTTPResponse, via: HTTPResponder)? {
        let (due, handlers): ((HTTPResponse, HTTPResponder)?, [@Sendable () -> Void]) = shared.state.withLock { st in
            guard !st.answered, !st.ended, let d = st.deadline else { return (nil, []) }
            st.deadline = nil
            defer { st.cancelHandlers = [] }
            return ((d.response, d.via), st.cancelHandlers)
        }
        for h in handlers { h() }
        return due
    }

    /// The connection closed before an answer: runs the cancel handlers.
    func cancel() {
        let (handlers, dropped): ([@Sendable () -> Void], [HTTPResponse]) = shared.state.withLock { st in
            var dropped: [HTTPResponse] = []
            if let s = st.stored { dropped.append(s); st.stored = nil }
            if let d = st.deadline { dropped.append(d.response); st.deadline = nil }
            guard !st.ended else { return ([], dropped) }
            st.ended = true
            defer { st.cancelHandlers = [] }
            return (st.answered ? [] : st.cancelHandlers, dropped)
        }
        for r in dropped { r.discardBody() }
        for h in handlers { h() }
    }
}

/// The connection side of a responder: told, on its loop, that an answer
/// (or a deadline) arrived from another thread.
protocol HTTPResponderOwner: AnyObject, Sendable {
    func answerArrived()
}
