/// Sending an answer's body: the output buffer flushed to the socket and
/// refilled from the outgoing body (bytes, a file region, a stream, a
/// paced body), and the end of that body, done or failed. All of it on the
/// session's loop, as the rest of `HTTP1Session`.
extension HTTP1Session {
    /// Sends queued output, refilling it from the outgoing body. Returns
    /// true when everything is sent, false when waiting for the socket (or closed).
    func pump() -> Bool {
        while true {
            if var body = outgoing, !body.isPush {
                switch body.advance(on: channel) {
                case .more(let bytes):
                    outgoing = body
                    pendingLog?.bytes += bytes
                case .waiting:
                    // A closed channel has let go of the body already.
                    if !channel.closed { outgoing = body }
                    return false
                case .paused(let bytes, let until):
                    // A paced body's budget is spent: what is queued goes
                    // out, the rest on the timer.
                    outgoing = body
                    pendingLog?.bytes += bytes
                    faultWake = min(faultWake, until)
                    _ = channel.flush()
                    if !channel.closed { channel.scheduleIfEarlier(faultWake) }
                    return false
                case .done(let bytes, let closeAfter):
                    pendingLog?.bytes += bytes
                    if closeAfter { state.endAfterOutput()?.abort() }
                    bodyDone()
                case .failed(let error):
                    bodyFailed(error)
                    return false
                }
            }
            guard channel.flush() else { return false }
            if outgoing?.refillsOutput != true { return true }
        }
    }

    /// The body going out is complete: its log line.
    func bodyDone() {
        outgoing = nil
        if let pending = pendingLog { log.answered(pending, now: now) }
        pendingLog = nil
    }

    /// The body going out failed after its head: the one error line, then
    /// the connection is cut (no last chunk, or short of its length), which
    /// is how the client learns the body is incomplete.
    func bodyFailed(_ error: any Error) {
        log.bodyFailed(pendingLog?.request, error)
        pendingLog = nil
        outgoing?.cancel()
        outgoing = nil
        channel.close()
    }
}
