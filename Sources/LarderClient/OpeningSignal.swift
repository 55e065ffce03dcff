import Foundation

/// Tells `changes()` when its first connection is open (the server has
/// subscribed it: every change from then on will be delivered) or has
/// failed for good. Settles once; later calls are ignored.
///
/// `@unchecked Sendable`: `state` and `waiter` are guarded by `lock`.
final class OpeningSignal: @unchecked Sendable {
    private enum State {
        case pending
        case opened
        case failed(any Error)
    }

    private let lock = NSLock()
    private var state = State.pending
    private var waiter: CheckedContinuation<Void, any Error>?

    func open() { settle(.opened) }

    func fail(_ error: any Error) { settle(.failed(error)) }

    /// Returns when the connection opened; throws why it did not, or
    /// `CancellationError` when the waiting task is cancelled.
    func wait() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now = lock.withLock { () -> State in
                    if case .pending = state { waiter = continuation }
                    return state
                }
                switch now {
                case .pending: break
                case .opened: continuation.resume()
                case .failed(let error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    private func settle(_ outcome: State) {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, any Error>? in
            guard case .pending = state else { return nil }
            state = outcome
            defer { self.waiter = nil }
            return self.waiter
        }
        switch outcome {
        case .pending: break
        case .opened: waiter?.resume()
        case .failed(let error): waiter?.resume(throwing: error)
        }
    }
}
