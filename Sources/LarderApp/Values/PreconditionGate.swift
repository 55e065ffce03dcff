import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderSupport

/// A conditional write (`If-Match`, `If-None-Match`, `If-Unmodified-Since`)
/// with `Expect: 100-continue`, on a store whose reads are round trips
/// (PostgreSQL): the condition is checked against the current metadata,
/// asked for asynchronously, before `100 Continue`; a failing one is a 412
/// before the body is sent, as on the disk store (whose check is a local
/// read, made in the route: `ValueRoutes.checkEarly`). No thread waits for
/// the database meanwhile. The store checks again when the write commits.
///
/// Wraps the sink that takes the body; everything else passes through.
///
/// A client may send its body without waiting for `100 Continue`, so the
/// body can be complete before the database answers. Exactly one of the
/// two decides, whichever comes first (`phase`): a failing early check
/// refuses the write (412, the body's sink aborted when it finishes), or
/// the finished body goes to the write, whose own check at commit is then
/// the only answer. So a 412 never goes out for a write that was applied.
final class PreconditionGate: HTTPContinueGate {
    private enum Phase { case pending, refused, finished }
    /// Moves once, from `pending`; read and set from the connection's
    /// queue (`finish`) and the store's callback thread.
    private let phase = Locked(Phase.pending)
    private let inner: HTTPRequestBodySink
    private let store: any ValueStore
    private let key: StoreKey
    private let condition: WriteCondition
    private let responder: HTTPResponder
    private let logger: Logger

    /// `sink`, gated when the request and the store call for it.
    static func wrap(_ sink: HTTPRequestBodySink, store: any ValueStore, key: StoreKey, condition: WriteCondition?,
                     request: RouteRequest, logger: Logger) -> HTTPRequestBodySink {
        guard let condition, store.answersLater, request.head.expectsContinue else { return sink }
        return PreconditionGate(inner: sink, store: store, key: key, condition: condition,
                                responder: request.responder, logger: logger)
    }

    private init(inner: HTTPRequestBodySink, store: any ValueStore, key: StoreKey, condition: @escaping WriteCondition,
                 responder: HTTPResponder, logger: Logger) {
        self.inner = inner
        self.store = store
        self.key = key
        self.condition = condition
        self.responder = responder
        self.logger = logger
    }

    func whenBodyWanted(_ proceed: @escaping @Sendable () -> Void) {
        let condition = self.condition, responder = self.responder, logger = self.logger, phase = self.phase
        store.currentMetadata(of: key) { current in
            do {
                try condition(try current.get())
            } catch {
                let refused = phase.withLock { phase in
                    guard phase == .pending else { return false }
                    phase = .refused
                    return true
                }
                // Finished first: the write's own check at commit answers.
                if refused { responder.respond(ErrorMapping.httpError(error, logger: logger).response) }
                return
            }
            proceed()
        }
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws { try inner.write(chunk) }
    func finish() {
        let refused = phase.withLock { phase in
            guard phase == .pending else { return phase == .refused }
            phase = .finished
            return false
        }
        if refused { inner.abort() } else { inner.finish() }
    }
    func abort() { inner.abort() }
}
