// SocketChannel's closing: the lingering close after a final answer, a fault's reset, and the socket's close.

import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

extension SocketChannel {
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

    func reset() {
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
        if let timer { loop.cancel(timer) }
        timer = nil
        if started { loop.unregister(fd) }
        Glibc.close(fd)
        delegate.channelClosed()
    }
}
