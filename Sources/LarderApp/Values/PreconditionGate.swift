import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// The early look at a conditional write (`If-Match`, `If-None-Match`,
/// `If-Unmodified-Since`) that says `Expect: 100-continue`: a condition that
/// already fails is a 412 before the body is sent. The store checks again
/// when the write publishes, so the look only saves the client its upload;
/// it never decides a write alone, and a look that fails to answer (the
/// database unreachable) lets the write go on to decide. Without `Expect`
/// the body comes anyway, and the write's own check is the only one: no
/// extra read for the common compare-and-swap PUT, on either store.
///
/// The look asks the store for the key's current metadata. Answered now
/// (the disk store: a local read), a failing condition is a 412 at once,
/// before the upload starts (`look`). Answered later (a database), the
/// body's sink is wrapped in a gate (`wrap`) that holds `100 Continue` back
/// until the answer comes, with no thread waiting for it.
///
/// A client may send its body without waiting for `100 Continue`, so the
/// body can be complete before the store answers. Exactly one of the two
/// decides, whichever comes first (`phase`): a failed look refuses the
/// write (412, the body's sink aborted), or the finished body goes to the
/// write, whose own check at commit is then the only answer. So a 412 never
/// goes out for a write that was applied.
final class PreconditionGate: HTTPContinueGate, @unchecked Sendable {
    private enum Phase {
        /// The store has not answered the look yet; `proceed` of a client
        /// waiting for `100 Continue` meanwhile.
        case looking(proceed: (@Sendable () -> Void)?)
        /// The condition held when looked at.
        case passed
        /// The condition failed; this is the answer, sent when the client
        /// waits for `100 Continue` or its body finishes.
        case refused(HTTPResponse)
        /// Answered (the refusal went out) or handed to the write (`finish`).
        case settled
    }
    /// Moves forward only; read and set from the connection's loop and the
    /// thread the store's answer comes on.
    private let phase = Locked(Phase.looking(proceed: nil))
    private let inner: HTTPRequestBodySink
    private let responder: HTTPResponder

    /// Looks at the current value when the request has a condition and
    /// waits for `100 Continue`: throws the 412 of a condition the store
    /// says fails now; returns the look that is still to come (nil: none).
    static func look(_ key: StoreKey, _ condition: WriteCondition?, in store: any ValueStore,
                     request: RouteRequest, logger: Logger) throws(HTTPError) -> StorePending<ValueMetadata?>? {
        guard let condition, request.head.expectsContinue else { return nil }
        switch store.currentMetadata(of: key) {
        case .now(let current):
            // A look that fails to answer decides nothing.
            guard case .success(let metadata) = current else { return nil }
            try ErrorMapping.run(logger) { try condition(metadata) }
            return nil
        case .later(let pending):
            return pending
        }
    }

    /// `sink`, gated by the look still to come (none: `sink` itself).
    static func wrap(_ sink: HTTPRequestBodySink, look: StorePending<ValueMetadata?>?, condition: WriteCondition?,
                     request: RouteRequest, logger: Logger) -> HTTPRequestBodySink {
        guard let look, let condition else { return sink }
        let gate = PreconditionGate(inner: sink, responder: request.responder)
        look.whenDone { [weak gate] current in
            let refusal: HTTPResponse?
            do {
                // A look that fails to answer decides nothing: the write does.
                if case .success(let metadata) = current { try condition(metadata) }
                refusal = nil
            } catch {
                refusal = ErrorMapping.httpError(error, logger: logger).response
            }
            guard let gate else {
                // The connection is done with the request.
                refusal?.discardBody()
                return
            }
            gate.decided(refusal)
        }
        return gate
    }

    private init(inner: HTTPRequestBodySink, responder: HTTPResponder) {
        self.inner = inner
        self.responder = responder
    }

    /// The look's answer (nil: the condition holds).
    private func decided(_ refusal: HTTPResponse?) {
        enum Next { case nothing, proceed(@Sendable () -> Void), respond(HTTPResponse), discard(HTTPResponse) }
        let next = phase.withLock { phase -> Next in
            guard case .looking(let proceed) = phase else {
                // The body finished first: the write's own check answers.
                return refusal.map(Next.discard) ?? .nothing
            }
            guard let refusal else {
                phase = .passed
                return proceed.map(Next.proceed) ?? .nothing
            }
            // A client waiting for `100 Continue` gets the refusal now;
            // one sending its body gets it when the body ends.
            guard proceed != nil else {
                phase = .refused(refusal)
                return .nothing
            }
            phase = .settled
            return .respond(refusal)
        }
        switch next {
        case .nothing: break
        case .proceed(let proceed): proceed()
        case .respond(let response): responder.respond(response)
        case .discard(let response): response.discardBody()
        }
    }

    func whenBodyWanted(_ proceed: @escaping @Sendable () -> Void) {
        enum Next { case wait, proceed, respond(HTTPResponse) }
        let next = phase.withLock { phase -> Next in
            switch phase {
            case .looking:
                phase = .looking(proceed: proceed)
                return .wait
            case .passed, .settled:
                return .proceed
            case .refused(let refusal):
                phase = .settled
                return .respond(refusal)
            }
        }
        switch next {
        case .wait: break
        case .proceed: proceed()
        case .respond(let response): responder.respond(response)
        }
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws { try inner.write(chunk) }

    func finish() {
        enum Next { case write, refuse(HTTPResponse), drop }
        let next = phase.withLock { phase -> Next in
            switch phase {
            case .looking, .passed:
                phase = .settled
                return .write
            case .refused(let refusal):
                phase = .settled
                return .refuse(refusal)
            case .settled:
                // The refusal already went out.
                return .drop
            }
        }
        switch next {
        case .write: inner.finish()
        case .refuse(let response):
            inner.abort()
            responder.respond(response)
        case .drop: inner.abort()
        }
    }

    func abort() { inner.abort() }
}
