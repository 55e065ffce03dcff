import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// The socket half of a connection: a non-blocking socket driven by
/// DispatchSource read and write sources and one timer, all on the
/// connection's serial queue (which targets the global pool: no extra
/// thread hop per request). It owns the input and output buffers, sends,
/// waits for writability when the socket is full, and lingers after a final
/// answer. It knows nothing of HTTP.
///
/// Reading stops while output waits for the socket (a client that does not
/// read cannot make the server buffer without bound), when the input buffer
/// is full and the session is not consuming it (a parked request), and after
/// the peer's EOF.
///
/// All mutable state is confined to `queue`, hence `@unchecked Sendable`.
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

    let queue: DispatchQueue
    let fd: Int32
    unowned(unsafe) var delegate: SocketChannelDelegate!
    let logger: Logger
    /// Where the bytes moved in each direction are counted.
    let meter: HTTPServerMetrics.Shard

    var readSource: DispatchSourceRead?
    var writeSource: DispatchSourceWrite?
    var timer: DispatchSourceTimer?
    var readSourceSuspended = false
    var writeSuspended = false
    var liveSources = 0
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
        self.queue = DispatchQueue(label: "larder.connection", target: .global())
        self.input = PageMemory.allocate(max(Self.inputCapacityFloor, inputCapacity))
        self.lastActivity = now
    }

    deinit {
        PageMemory.deallocate(input)
        output.deallocate()
    }

    /// Starts the read source and the timer (on the queue).
    func start(deadline: UInt64) {
        let rs = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        rs.setEventHandler { [self] in onReadable() }
        rs.setCancelHandler { [self] in sourceCancelled() }
        liveSources += 1
        readSource = rs
        let t = DispatchSource.makeTimerSource(queue: queue)
        t.setEventHandler { [self] in onTimer() }
        timer = t
        schedule(deadline)
        t.resume()
        rs.resume()
    }

    func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 && closed { Glibc.close(fd) }
    }

    // MARK: - Timer

    /// Sets the timer to `deadline` (uptime nanoseconds).
    func schedule(_ deadline: UInt64) {
        timerDeadline = deadline
        timer?.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(50))
    }

    /// Moves the timer earlier when `deadline` comes first.
    func scheduleIfEarlier(_ deadline: UInt64) {
        if deadline < timerDeadline { schedule(deadline) }
    }

    private func onTimer() {
        guard !closed else { return }
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
