import LarderSupport

/// A response body the application writes whenever it has something (an
/// event stream), from any thread. The connection sends each piece as a
/// chunk as soon as it can.
///
/// A reader that falls behind never slows the writer: once more than
/// `maxBuffered` bytes wait unsent for this connection, `overflowTail` is
/// queued as the last piece and the connection is closed.
public final class HTTPPushStream: @unchecked Sendable {
    public let maxBuffered: Int
    public let overflowTail: [UInt8]

    // Everything below is guarded by `lock`.
    private let lock = Lock()
    /// Bytes written and not yet taken by the connection. Pieces written
    /// while the connection is busy pile up here and leave in one send.
    private var pending: [UInt8] = []
    /// Set by the connection: asks its queue to take what is pending.
    private var wake: (@Sendable () -> Void)?
    /// A wake is on its way; writes until it runs need not send another.
    private var wakeScheduled = false
    private var finished = false
    private var closed = false
    private var closeHandlers: [@Sendable () -> Void] = []

    public init(maxBuffered: Int = 1 << 20, overflowTail: [UInt8] = []) {
        self.maxBuffered = maxBuffered
        self.overflowTail = overflowTail
    }

    /// Queues `bytes` for the client. False once the stream is closed or finished.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        var overflow = false
        var wakeNow: (@Sendable () -> Void)?
        let ok: Bool = lock.withLock {
            guard !closed && !finished else { return false }
            pending += bytes
            // Not even taken by the connection yet: the reader is far behind.
            if pending.count > maxBuffered { overflow = true; return true }
            if let wake, !wakeScheduled { wakeScheduled = true; wakeNow = wake }
            return true
        }
        wakeNow?()
        if overflow { overflowed() }
        return ok
    }

    /// Ends the body; the connection then goes on with the next request.
    public func finish() {
        let wakeNow: (@Sendable () -> Void)? = lock.withLock {
            guard !closed && !finished else { return nil }
            finished = true
            guard let wake, !wakeScheduled else { return nil }
            wakeScheduled = true
            return wake
        }
        wakeNow?()
    }

    /// Runs `handler` once when the client is gone or the stream overflowed
    /// (at once if that already happened). Not run after `finish`.
    public func whenClosed(_ handler: @escaping @Sendable () -> Void) {
        let now: Bool = lock.withLock {
            if closed { return true }
            closeHandlers.append(handler)
            return false
        }
        if now { handler() }
    }

    public var isClosed: Bool { lock.withLock { closed } }

    // MARK: - The connection's side

    /// The connection starts sending; `wake` is how later writes reach its queue.
    func bind(_ wake: @escaping @Sendable () -> Void) {
        lock.withLock { if !closed { self.wake = wake } }
    }

    /// What is pending (emptied), whether the stream finished, and whether it
    /// overflowed (closed) before the connection could take it.
    func take() -> (bytes: [UInt8], finished: Bool, closed: Bool) {
        lock.withLock {
            wakeScheduled = false
            defer { pending = [] }
            return (pending, finished, closed)
        }
    }

    private func overflowed() {
        let wakeNow: (@Sendable () -> Void)? = lock.withLock {
            guard let wake, !wakeScheduled else { return nil }
            wakeScheduled = true
            return wake
        }
        connectionClosed(keepPending: true)
        wakeNow?()
    }

    /// The connection closed (or the reader fell too far behind).
    func connectionClosed(keepPending: Bool = false) {
        let handlers: [@Sendable () -> Void] = lock.withLock {
            guard !closed else { return [] }
            closed = true
            if !keepPending { wake = nil; pending = [] }
            defer { closeHandlers = [] }
            return finished ? [] : closeHandlers
        }
        for h in handlers { h() }
    }
}
