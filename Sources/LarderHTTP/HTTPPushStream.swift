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
    /// Pieces written before the connection took the stream.
    private var early: [[UInt8]] = []
    private var earlyBytes = 0
    /// Set by the connection: hands a piece (nil: the end) to its queue.
    private var deliver: (@Sendable ([UInt8]?) -> Void)?
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
        let ok: Bool = lock.withLock {
            guard !closed && !finished else { return false }
            // Delivered under the lock so pieces keep their order.
            if let deliver { deliver(bytes); return true }
            early.append(bytes)
            earlyBytes += bytes.count
            if earlyBytes > maxBuffered { overflow = true }
            return true
        }
        if overflow { connectionClosed() }
        return ok
    }

    /// Ends the body; the connection then goes on with the next request.
    public func finish() {
        lock.withLock {
            guard !closed && !finished else { return }
            finished = true
            deliver?(nil)
        }
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

    /// The connection starts sending: takes what was written so far, and
    /// whether the stream already finished or overflowed (closed).
    func bind(_ deliver: @escaping @Sendable ([UInt8]?) -> Void) -> (pieces: [[UInt8]], finished: Bool, closed: Bool) {
        lock.withLock {
            if !closed { self.deliver = deliver }
            defer { early = []; earlyBytes = 0 }
            return (early, finished, closed)
        }
    }

    /// The connection closed (or the reader fell too far behind).
    func connectionClosed() {
        let handlers: [@Sendable () -> Void] = lock.withLock {
            guard !closed else { return [] }
            closed = true
            deliver = nil
            defer { closeHandlers = [] }
            return finished ? [] : closeHandlers
        }
        for h in handlers { h() }
    }
}
