import LarderSupport

/// An answer a store gives later (`StoreReply.later`): fulfilled once, from
/// any thread, and handed to the one continuation registered for it, which
/// runs on the fulfilling thread (or at once, on the registering one, when
/// the answer is already there).
public final class StorePending<Value: Sendable>: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = Lock()
    private var result: Result<Value, any Error>?
    private var continuation: (@Sendable (Result<Value, any Error>) -> Void)?
    /// Whether a continuation was registered (before or after the answer).
    private var taken = false

    public init() {}

    /// Gives the answer. Only the first call counts.
    public func fulfil(_ result: Result<Value, any Error>) {
        let waiting = lock.withLock { () -> (@Sendable (Result<Value, any Error>) -> Void)? in
            guard self.result == nil else { return nil }
            self.result = result
            defer { continuation = nil }
            return continuation
        }
        waiting?(result)
    }

    /// Registers the one continuation; it runs outside the lock.
    public func whenDone(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        let ready = lock.withLock { () -> Result<Value, any Error>? in
            precondition(!taken, "a StorePending takes one continuation")
            taken = true
            if result == nil { continuation = completion }
            return result
        }
        if let ready { completion(ready) }
    }
}
