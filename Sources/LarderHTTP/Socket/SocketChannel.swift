import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// What a channel tells the protocol session above it. Called on the channel's queue.
protocol SocketChannelDelegate: AnyObject {
    /// New input is buffered, or (`eof`) the peer closed its side.
    func channelReceived(eof: Bool)
    /// The socket took what was waiting; more output may be queued.
    func channelWritable()
    /// The timer reached the deadline the session set.
    func channelTimerFired()
    /// The channel closed; it will call nothing more.
    func channelClosed()
}

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
    private static let lingerNanos: UInt64 = 2_000_000_000

    let queue: DispatchQueue
    let fd: Int32
    unowned(unsafe) var delegate: SocketChannelDelegate!
    private let logger: Logger
    /// Where the bytes moved in each direction are counted.
    let meter: HTTPServerMetrics.Shard

    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var timer: DispatchSourceTimer?
    private var readSourceSuspended = false
    private var writeSuspended = false
    private var liveSources = 0
    private(set) var closed = false
    private(set) var peerClosed = false
    private var waitingForWritable = false
    private var inputFull = false
    /// The session holds reading back (a request body read at a fault's rate).
    private var inputHeld = false
    /// A fault's reset waits for the kernel to deliver what was sent before it.
    private var resetting = false
    private var resetDeadline: UInt64 = 0

    private var input: UnsafeMutableRawBufferPointer
    private var inStart = 0
    private var inEnd = 0
    /// Unchecked exclusivity: confined to `queue`, and appended to many
    /// times per answer; no call made while it is changed (a body stream's
    /// read into it) can reach it again.
    @exclusivity(unchecked) var output = OutputBuffer(capacity: SocketChannel.outputCapacity)

    /// Time of the current event, read once per event.
    private(set) var now: UInt64 = DispatchTime.now().uptimeNanoseconds
    /// Reads the clock for work that did not start with a socket event (an
    /// answer or a pushed piece from another thread).
    func refreshNow() { now = DispatchTime.now().uptimeNanoseconds }

    /// Last time bytes moved in either direction.
    var lastActivity: UInt64
    private(set) var timerDeadline: UInt64 = .max
    private(set) var lingering = false
    private var lingerDeadline: UInt64 = 0
    private var lastSendQueue: Int32 = 0

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

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 && closed { Glibc.close(fd) }
    }

    // MARK: - Input

    /// Bytes received and not yet consumed.
    var unread: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: input[inStart..<inEnd]) }
    var hasUnread: Bool { inStart < inEnd }
    var inputCapacity: Int { input.count }
    /// The whole buffer holds one unconsumed run from its start.
    var inputIsFullFromStart: Bool { inStart == 0 && inEnd == input.count }

    func consume(_ n: Int) {
        inStart += n
        if inStart == inEnd { inStart = 0; inEnd = 0 }
        if inputFull && n > 0 { inputFull = false; updateReading() }
    }

    func discardInput() {
        inStart = 0
        inEnd = 0
        if inputFull { inputFull = false; updateReading() }
    }

    private func onReadable() {
        guard !closed else { return }
        now = DispatchTime.now().uptimeNanoseconds
        if buffersReleased {
            // Busy again after an idle spell: look again once it is over.
            buffersReleased = false
            scheduleIfEarlier(now + Self.releaseAfterNanos)
        }
        var eof = false
        var received = 0
        while true {
            if inEnd == input.count { compactInput() }
            let space = input.count - inEnd
            if space == 0 { break }
            let n = recv(fd, input.baseAddress! + inEnd, space, 0)
            if n > 0 {
                inEnd += n
                received += n
                if n < space { break }
                continue
            }
            if n == 0 { eof = true; break }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { break }
            logger.debug("connection \(fd): recv failed, errno \(code)")
            if received > 0 { meter.received(received) }
            close()
            return
        }
        // Counted before the delegate sees them: a scrape answered in this
        // event includes its own request.
        if received > 0 { meter.received(received) }
        lastActivity = now
        if lingering {
            // Drop what arrives; close at EOF.
            inStart = 0
            inEnd = 0
            if eof { close() }
            return
        }
        if eof {
            peerClosed = true
            updateReading()
        }
        delegate.channelReceived(eof: eof)
        // Nothing consumed a full buffer: stop reading until something is,
        // instead of spinning on a socket that stays readable.
        if !closed && inEnd - inStart == input.count && !inputFull {
            inputFull = true
            updateReading()
        }
    }

    /// The connection waits for its next request with nothing unread and
    /// nothing to send: its buffers' pages go back to the kernel until
    /// they are used again (`PageRelease`). Called from the timer, never
    /// per request.
    func releaseIdleBuffers() {
        guard !closed, inStart == inEnd else { return }
        PageMemory.release(input)
        output.releasePages()
        buffersReleased = true
    }

    /// The buffers' pages were given back and not used since.
    private(set) var buffersReleased = false
    /// How long a connection waits idle before it gives its buffers' pages back.
    static let releaseAfterNanos: UInt64 = 2_000_000_000

    private func compactInput() {
        guard inStart > 0 else { return }
        let live = inEnd - inStart
        if live > 0 { input.baseAddress!.copyMemory(from: input.baseAddress! + inStart, byteCount: live) }
        inStart = 0
        inEnd = live
    }

    /// Resumes or suspends the read source to match why reading may be paused.
    private func updateReading() {
        guard let rs = readSource else { return }
        let paused = waitingForWritable || inputFull || peerClosed || inputHeld
        if paused && !readSourceSuspended {
            rs.suspend()
            readSourceSuspended = true
        } else if !paused && readSourceSuspended {
            rs.resume()
            readSourceSuspended = false
        }
    }

    /// Stops (or resumes) reading from the socket while the session wants
    /// no more input for now (a paced request body): what the client sends
    /// meanwhile waits in the kernel, and then in the client.
    func holdInput(_ hold: Bool) {
        guard hold != inputHeld else { return }
        inputHeld = hold
        updateReading()
    }

    // MARK: - Output

    /// Sends queued output. True when all of it is sent; false when waiting
    /// for the socket (the delegate hears `channelWritable`) or closed.
    func flush() -> Bool {
        guard sendOutput(more: false) else { return false }
        output.shrink(to: Self.outputCapacity)
        if waitingForWritable { stopWaitingForWritable() }
        return true
    }

    /// A file region goes out in pieces of at most this many bytes, so one
    /// call never asks the kernel for more than it can take in a while.
    private static let sendfileChunk = 1 << 30

    /// Sends queued output, then `remaining` bytes of `file` from `offset`
    /// with `sendfile(2)` (both advanced by what went out). True when all of
    /// it is sent; false when waiting for the socket (the write source
    /// resumes it: `channelWritable`) or closed. Never blocks on the socket;
    /// a short file closes the connection (its head promised the length).
    func flush(file: Int32, offset: inout Int64, remaining: inout Int64) -> Bool {
        // MSG_MORE: the head waits a moment for the file's first bytes, so
        // the two leave in full segments, not a tiny one first.
        guard sendOutput(more: remaining > 0) else { return false }
        while remaining > 0 {
            var off = off_t(offset)
            let n = Glibc.sendfile(fd, file, &off, Int(min(remaining, Int64(Self.sendfileChunk))))
            switch outcome(of: n) {
            case .sent:
                offset += Int64(n)
                remaining -= Int64(n)
            case .interrupted:
                continue
            case .waiting:
                return false
            case .failed(let code):
                if n == 0 {
                    logger.error("connection \(fd): the response's file ended \(remaining) bytes early")
                } else {
                    logger.debug("connection \(fd): sendfile failed, errno \(code)")
                }
                close()
                return false
            }
        }
        output.shrink(to: Self.outputCapacity)
        if waitingForWritable { stopWaitingForWritable() }
        return true
    }

    /// Sends the output buffer: true when empty, false when the socket is
    /// full (now waiting for writability) or the connection closed.
    private func sendOutput(more: Bool) -> Bool {
        let flags = Int32(MSG_NOSIGNAL) | (more ? Int32(MSG_MORE) : 0)
        while !output.isEmpty {
            let pending = output.unsent
            let n = Glibc.send(fd, pending.baseAddress!, pending.count, flags)
            switch outcome(of: n) {
            case .sent:
                output.consumed(n)
            case .interrupted:
                continue
            case .waiting:
                return false
            case .failed(let code):
                logger.debug("connection \(fd): send failed, errno \(code)")
                close()
                return false
            }
        }
        return true
    }

    /// What one `send` or `sendfile` result means for its loop.
    private enum SendOutcome {
        case sent, interrupted, waiting
        case failed(errno: Int32)
    }

    /// Reads a send's result (and `errno`, so call it right after the
    /// call): counts bytes sent, or on a full socket starts waiting for
    /// writability (`channelWritable` resumes the sender).
    private func outcome(of n: Int) -> SendOutcome {
        if n > 0 {
            meter.sent(n)
            lastActivity = now
            return .sent
        }
        let code = errno
        if n < 0 && code == EINTR { return .interrupted }
        if n < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
            // What the kernel holds now; the idle check compares against it.
            lastSendQueue = sendQueueLength()
            waitForWritable()
            return .waiting
        }
        return .failed(errno: code)
    }

    private func waitForWritable() {
        waitingForWritable = true
        updateReading()
        if let ws = writeSource {
            if writeSuspended { ws.resume(); writeSuspended = false }
            return
        }
        let ws = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        ws.setEventHandler { [self] in onWritable() }
        ws.setCancelHandler { [self] in sourceCancelled() }
        liveSources += 1
        writeSource = ws
        writeSuspended = false
        ws.resume()
    }

    private func stopWaitingForWritable() {
        waitingForWritable = false
        if let ws = writeSource, !writeSuspended {
            ws.suspend()
            writeSuspended = true
        }
        updateReading()
    }

    private func onWritable() {
        guard !closed else { return }
        now = DispatchTime.now().uptimeNanoseconds
        lastActivity = now
        delegate.channelWritable()
    }

    /// Whether the kernel's send queue for this socket got shorter since
    /// the last look (SIOCOUTQ): the client is reading, just slowly.
    func sendQueueShrank() -> Bool {
        let queued = sendQueueLength()
        defer { lastSendQueue = queued }
        return queued < lastSendQueue
    }

    private func sendQueueLength() -> Int32 {
        var queued: Int32 = 0
        return ioctl(fd, UInt(0x5411) /* SIOCOUTQ */, &queued) == 0 ? queued : 0
    }

    /// Bytes the kernel holds for us that no read event has delivered yet.
    func bytesWaiting() -> Bool {
        var available: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &available) == 0 && available > 0
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

    // MARK: - Closing

    /// After a final answer: send FIN, then read and drop until the client
    /// closes, so unread input does not turn into a RST that destroys the
    /// answer in flight.
    func beginLingeringClose(idleTimeout: UInt64) {
        if peerClosed { close(); return }
        shutdown(fd, Int32(SHUT_WR))
        lingering = true
        lingerDeadline = now + min(Self.lingerNanos, idleTimeout)
        schedule(lingerDeadline)
        waitingForWritable = false
        inputFull = false
        // A paced body's hold too: lingering drains what the client still sends.
        inputHeld = false
        updateReading()
    }

    /// How often a pending reset looks whether the kernel has delivered
    /// what was sent before it, and how long it waits for that at most.
    private static let resetPollNanos: UInt64 = 5_000_000
    private static let resetWaitNanos: UInt64 = 2_000_000_000

    /// Ends the connection with a TCP reset (a fault of the network, `drop`):
    /// `SO_LINGER` 0, then close, so the peer's next read fails with
    /// ECONNRESET instead of seeing an end. Answers queued before it (a
    /// pipelined request's) are delivered first: the reset waits until the
    /// kernel's send queue is empty (at most 2 s), since a reset discards it.
    func resetWhenDelivered() {
        guard !closed, !resetting else { return }
        refreshNow()
        if sendQueueLength() == 0 { return reset() }
        resetting = true
        resetDeadline = now + Self.resetWaitNanos
        inputHeld = true
        updateReading()
        schedule(now + Self.resetPollNanos)
    }

    private func reset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        if setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size)) != 0 {
            logger.debug("connection \(fd): SO_LINGER failed, errno \(errno)")
        }
        close()
    }

    /// Ends a lingering close within `nanos` from now, if it would last
    /// longer (the server is stopping).
    func limitLinger(to nanos: UInt64) {
        guard lingering, !closed else { return }
        refreshNow()
        if now + nanos < lingerDeadline {
            lingerDeadline = now + nanos
            schedule(lingerDeadline)
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        timer?.cancel()
        timer = nil
        if let rs = readSource {
            if readSourceSuspended { rs.resume() }
            rs.cancel()
            readSource = nil
        }
        if let ws = writeSource {
            if writeSuspended { ws.resume() }
            ws.cancel()
            writeSource = nil
        }
        if liveSources == 0 { Glibc.close(fd) }
        delegate.channelClosed()
    }
}
