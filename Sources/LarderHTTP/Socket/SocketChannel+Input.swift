// SocketChannel's input: the receive buffer, reading the socket, and when reading pauses.

import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

extension SocketChannel {
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

    /// One readable event: receives into the input buffer and hands it to
    /// the session, and again while the buffer keeps filling to the brim
    /// (a large body arriving faster than it is stored), up to
    /// `readBudgetPerEvent` bytes, after which the rest is read in a job
    /// of its own, so that the loop's other connections get their turn.
    func onReadable() {
        guard !closed else { return }
        readableEvents &+= 1
        now = DispatchTime.now().uptimeNanoseconds
        if buffersReleased {
            // Busy again after an idle spell: look again once it is over.
            buffersReleased = false
            scheduleIfEarlier(now + Self.releaseAfterNanos)
        }
        var budget = Self.readBudgetPerEvent
        var first = true
        while true {
            guard let (received, eof, filled) = receive() else { return }
            // A further round that found nothing new tells the session nothing.
            if !first && received == 0 && !eof { return }
            first = false
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
            budget -= received
            // More is likely waiting only when the last recv filled the
            // buffer; and only while reading is not paused for a reason.
            guard filled, !closed, !readingPaused, !lingering else { return }
            if budget <= 0 {
                // No new edge will come for what is already there: read on
                // after the loop's other work.
                loop.post { [self] in if !closed && !readingPaused { onReadable() } }
                return
            }
        }
    }

    /// Reads what the socket holds into the free part of the input buffer:
    /// the bytes received, whether the peer's EOF came, and whether the
    /// last `recv` filled the buffer (more may be waiting). Nil when a
    /// failure closed the connection.
    private func receive() -> (received: Int, eof: Bool, filled: Bool)? {
        var eof = false
        var filled = false
        var received = 0
        while true {
            if inEnd == input.count { compactInput() }
            let space = input.count - inEnd
            if space == 0 { break }
            let n = recv(fd, input.baseAddress! + inEnd, space, 0)
            if n > 0 {
                inEnd += n
                received += n
                // Short: the socket is drained, unless the peer's end came
                // too (epoll said so once: read on to the EOF).
                if n < space && !endPending { break }
                filled = true
                continue
            }
            filled = false
            if n == 0 { eof = true; break }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { break }
            logger.debug("connection \(fd): recv failed, errno \(code)")
            if received > 0 { meter.received(received) }
            close()
            return nil
        }
        // Counted before the delegate sees them: a scrape answered in this
        // event includes its own request.
        if received > 0 { meter.received(received) }
        return (received, eof, filled)
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

    private func compactInput() {
        guard inStart > 0 else { return }
        let live = inEnd - inStart
        if live > 0 { input.baseAddress!.copyMemory(from: input.baseAddress! + inStart, byteCount: live) }
        inStart = 0
        inEnd = live
    }

    /// Stops or resumes reading to match why reading may be paused. Events
    /// are edge-triggered: input that came while reading was stopped raised
    /// its only event then, so resuming reads at once (after the current
    /// work).
    func updateReading() {
        guard started else { return }
        let paused = waitingForWritable || inputFull || peerClosed || inputHeld
        guard paused != readingPaused else { return }
        readingPaused = paused
        if !paused {
            loop.post { [self] in if !closed && !readingPaused { onReadable() } }
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
}
