// SocketChannel's output: the output buffer and files sent, and the wait for a full socket to take more.

import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

extension SocketChannel {
    /// Sends queued output. True when all of it is sent; false when waiting
    /// for the socket (the delegate hears `channelWritable`) or closed.
    func flush() -> Bool {
        guard sendOutput(more: false) else { return false }
        output.shrink(to: Self.outputCapacity)
        if waitingForWritable { stopWaitingForWritable() }
        return true
    }

    /// Sends queued output, then `remaining` bytes of `file` from `offset`
    /// with `sendfile(2)` (both advanced by what went out). True when all of
    /// it is sent; false when waiting for the socket (the loop
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

    /// The socket is full: stop reading until it takes more (the loop's
    /// next room-to-write event: `onWritable`).
    private func waitForWritable() {
        waitingForWritable = true
        updateReading()
    }

    private func stopWaitingForWritable() {
        waitingForWritable = false
        updateReading()
    }

    func onWritable() {
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

    func sendQueueLength() -> Int32 {
        var queued: Int32 = 0
        return ioctl(fd, UInt(0x5411) /* SIOCOUTQ */, &queued) == 0 ? queued : 0
    }

    /// Bytes the kernel holds for us that no read event has delivered yet.
    func bytesWaiting() -> Bool {
        var available: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &available) == 0 && available > 0
    }
}
