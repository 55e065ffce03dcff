import Dispatch

/// A store's answer to one call: given now, or later.
///
/// This is the one shape of every store call that may wait (a read, a
/// write's commit, a delete, a listing). The disk store answers `now`, on
/// the caller's thread, from its cache or a local file; a store whose calls
/// are network round trips (PostgreSQL) answers `later`, from the thread its
/// reply arrives on, and no thread waits for it meanwhile. A caller writes
/// one path for both: `whenDone` (or `deliver(to:)`) runs its continuation
/// inline for an answer given now, and when the answer comes otherwise.
/// `deliver(to:)` with a struct receiver costs no allocation for an answer
/// given now (a cached GET's path); `value` serves async code; `get()` is for
/// callers that are synchronous by design (the embedded store's API, tests).
public enum StoreReply<Value: Sendable>: Sendable {
    /// The answer, given now.
    case now(Result<Value, any Error>)
    /// The answer comes later, through the pending reply.
    case later(StorePending<Value>)

    /// The answer `body` gives now (its error, if it throws).
    @inlinable
    public static func catching(_ body: () throws -> Value) -> StoreReply {
        .now(Result(catching: body))
    }

    /// The answer `body` gives later, from a new pending reply that `body`
    /// fulfils (on any thread, exactly once).
    public static func later(_ body: (StorePending<Value>) -> Void) -> StoreReply {
        let pending = StorePending<Value>()
        body(pending)
        return .later(pending)
    }

    /// Runs `completion` with the answer: here and now for an answer given
    /// now, else on the thread that gives it.
    @inlinable
    public func whenDone(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        switch self {
        case .now(let result): completion(result)
        case .later(let pending): pending.whenDone(completion)
        }
    }

    /// Hands the answer to `receiver`, as `whenDone` does; the receiver is
    /// boxed only for an answer that comes later.
    @inlinable
    public func deliver<Receiver: StoreReplyReceiver>(to receiver: Receiver) where Receiver.Value == Value {
        switch self {
        case .now(let result): receiver.receive(result)
        case .later(let pending): pending.whenDone { receiver.receive($0) }
        }
    }

    /// The answer, blocking the calling thread until it comes: for callers
    /// that are synchronous by design. Never call it on a thread the answer
    /// needs (a store's own queues).
    public func get() throws -> Value {
        switch self {
        case .now(let result):
            return try result.get()
        case .later(let pending):
            let done = DispatchSemaphore(value: 0)
            let box = ResultBox<Value>()
            pending.whenDone { result in
                box.result = result
                done.signal()
            }
            done.wait()
            // The semaphore orders the write before this read.
            return try box.result!.get()
        }
    }

    /// The answer, for async code: suspends (no thread waits) until it comes.
    public var value: Value {
        get async throws {
            switch self {
            case .now(let result):
                return try result.get()
            case .later(let pending):
                return try await withCheckedThrowingContinuation { continuation in
                    pending.whenDone { continuation.resume(with: $0) }
                }
            }
        }
    }

    /// The answer `transform` makes of this one's value (an error passes
    /// through); given now when this one is.
    public func map<T: Sendable>(_ transform: @escaping @Sendable (Value) throws -> T) -> StoreReply<T> {
        then { result in .now(Result { try transform(try result.get()) }) }
    }

    /// The reply `next` makes of this one's answer: a second call that
    /// depends on the first. Given now when both are.
    public func then<T: Sendable>(_ next: @escaping @Sendable (Result<Value, any Error>) -> StoreReply<T>) -> StoreReply<T> {
        switch self {
        case .now(let result):
            return next(result)
        case .later(let pending):
            return .later { chained in
                pending.whenDone { result in next(result).whenDone(chained.fulfil) }
            }
        }
    }
}

/// Takes a store's answer (`StoreReply.deliver(to:)`). A struct receiver
/// keeps an answer given now free of allocations.
public protocol StoreReplyReceiver: Sendable {
    associatedtype Value: Sendable
    func receive(_ result: Result<Value, any Error>)
}

/// Carries a result from the thread that sets it to the one a semaphore
/// wakes (`StoreReply.get`), which reads it only after the signal.
private final class ResultBox<Value>: @unchecked Sendable {
    var result: Result<Value, any Error>?
}
