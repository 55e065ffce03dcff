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

    func onReadable() {
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

    private func compactInput() {
        guard inStart > 0 else { return }
        let live = inEnd - inStart
        if live > 0 { input.baseAddress!.copyMemory(from: input.baseAddress! + inStart, byteCount: live) }
        inStart = 0
        inEnd = live
    }

    /// Resumes or suspends the read source to match why reading may be paused.
    func updateReading() {
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
}
