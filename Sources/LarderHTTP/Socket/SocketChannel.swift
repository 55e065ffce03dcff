import CEpoll
import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// The socket half of a connection: a non-blocking socket on one of the
/// server's event loops (`EventLoop`), which tells it of input, of room to
/// write and of its timer, all on the loop's thread. It owns the input and
/// output buffers, sends, waits for writability when the socket is full,
/// and lingers after a final answer. It knows nothing of HTTP.
///
/// Reading stops while output waits for the socket (a client that does not
/// read cannot make the server buffer without bound), when the input buffer
/// is full and the session is not consuming it (a parked request), and after
/// the peer's EOF. Events are edge-triggered: input that came while reading
/// was stopped is read when it resumes (`updateReading`).
///
/// All mutable state is confined to the loop's thread, hence `@unchecked Sendable`.
final class SocketChannel: @unchecked Sendable {
    private static let inputCapacityFloor = 64 * 1024
    static let outputCapacity = 64 * 1024
    /// The most one readable event takes from the socket before it lets
    /// the other connections' events run (`onReadable`).
    static let readBudgetPerEvent = 4 << 20
    static let lingerNanos: UInt64 = 2_000_000_000

    /// A file region goes out in pieces of at most this many bytes, so one
    /// call never asks the kernel for more than it can take in a while.
    static let sendfileChunk = 1 << 30

    /// How long a connection waits idle before it gives its buffers' pages back.
    static let releaseAfterNanos: UInt64 = 2_000_000_000

    /// How often a pending reset looks whether the kernel has delivered
    /// what was sent before it, and how long it waits for that at most.
    static let resetPollNanos: UInt64 = 5_000_000
    static let resetWaitNanos: UInt64 = 2_000_000_000

    /// The loop the connection lives on: every call below is made there.
    let loop: EventLoop
    let fd: Int32
    unowned(unsafe) var delegate: SocketChannelDelegate!
    let logger: Logger
    /// Where the bytes moved in each direction are counted.
    let meter: HTTPServerMetrics.Shard

    /// Registered with the loop (from `start` until `close`).
    var started = false
    var timer: LoopTimer?
    /// Reading is stopped (see `updateReading`).
    var readingPaused = false
    /// epoll reported the peer's end of input (or a failure): reads go on
    /// to the EOF or error, which no later event would report.
    var endPending = false
    var closed = false
    var peerClosed = false
    var waitingForWritable = false
    var inputFull = false
    /// The session holds reading back (a request body read at a fault's rate).
    var inputHeld = false
    /// A fault's reset waits for the kernel to deliver what was sent before it.
    var resetting = false
    var resetDeadline: UInt64 = 0

    var input: UnsafeMutableRawBufferPointer
    var inStart = 0
    var inEnd = 0
    /// Unchecked exclusivity: confined to `queue`, and appended to many
    /// times per answer; no call made while it is changed (a body stream's
    /// read into it) can reach it again.
    @exclusivity(unchecked) var output = OutputBuffer(capacity: SocketChannel.outputCapacity)

    /// Time of the current event, read once per event.
    var now: UInt64 = DispatchTime.now().uptimeNanoseconds
    /// Reads the clock for work that did not start with a socket event (an
    /// answer or a pushed piece from another thread).
    func refreshNow() { now = DispatchTime.now().uptimeNanoseconds }

    /// Last time bytes moved in either direction.
    var lastActivity: UInt64
    private(set) var timerDeadline: UInt64 = .max
    var lingering = false
    var lingerDeadline: UInt64 = 0
    var lastSendQueue: Int32 = 0
    /// Readable events handled so far (`onReadable` calls): what each costs
    /// in Dispatch is why one event reads on while input keeps coming.
    var readableEvents = 0
    /// The buffers' pages were given back and not used since.
    var buffersReleased = false

    init(fd: Int32, inputCapacity: Int, logger: Logger, meter: HTTPServerMetrics.Shard) {
        self.fd = fd
        self.logger = logger
        self.meter = meter
        self.loop = EventLoop.next()
        self.input = PageMemory.allocate(max(Self.inputCapacityFloor, inputCapacity))
        self.lastActivity = now
    }

    deinit {
        PageMemory.deallocate(input)
        output.deallocate()
    }

    /// Registers with the loop and sets the timer (on the loop).
    func start(deadline: UInt64) {
        timer = LoopTimer { [weak self] in self?.onTimer() }
        guard loop.register(fd, self) else {
            logger.error("connection \(fd): the event loop refused the socket, errno \(errno)")
            close()
            return
        }
        started = true
        schedule(deadline)
    }

    // MARK: - Timer

    /// Sets the timer to `deadline` (uptime nanoseconds).
    func schedule(_ deadline: UInt64) {
        timerDeadline = deadline
        if let timer { loop.schedule(timer, at: deadline) }
    }

    /// Moves the timer earlier when `deadline` comes first.
    func scheduleIfEarlier(_ deadline: UInt64) {
        if deadline < timerDeadline { schedule(deadline) }
    }

    private func onTimer() {
        guard !closed else { return }
        timerDeadline = .max
        now = DispatchTime.now().uptimeNanoseconds
        if lingering {
            if now >= lingerDeadline { close() } else { schedule(lingerDeadline) }
            return
        }
        if resetting {
            if now >= resetDeadline || sendQueueLength() == 0 { reset() } else { schedule(now + Self.resetPollNanos) }
            return
        }
        delegate.channelTimerFired()
    }
}

extension SocketChannel: EventLoopSocket {
    /// What epoll reported for the socket (each change once: edge-triggered).
    func socketEvent(_ events: UInt32) {
        guard !closed else { return }
        let failed = events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
        if failed || events & EPOLLRDHUP.rawValue != 0 { endPending = true }
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0 || failed {
            // While reading is stopped, what came waits in the kernel: it is
            // read when reading resumes.
            if !readingPaused { onReadable() }
        }
        if !closed && waitingForWritable && (events & EPOLLOUT.rawValue != 0 || failed) { onWritable() }
    }
}
