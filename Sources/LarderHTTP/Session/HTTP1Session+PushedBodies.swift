import Dispatch
import LarderSupport

/// Bodies the application pushes as it goes (an event stream): taken on
/// the channel's loop when the application says there is more.
extension HTTP1Session {
    /// Sends what the application pushed since the last look (on the loop).
    func pushed() {
        channel.refreshNow()
        takePushed()
        drive()
    }

    func takePushed() {
        guard !channel.closed, case .push(let p, let chunked)? = outgoing else { return }
        let (bytes, finished, overflowed) = p.take()
        if overflowed || channel.output.count + bytes.count > p.maxBuffered {
            // The reader fell too far behind: a last word, then close.
            appendPushed(p.overflowTail, chunked: chunked)
            endPush(chunked: chunked)
            state.endAfterOutput()?.abort()
            p.connectionClosed()
        } else {
            appendPushed(bytes, chunked: chunked)
            if finished { endPush(chunked: chunked) }
        }
    }

    func appendPushed(_ piece: [UInt8], chunked: Bool) {
        guard !piece.isEmpty else { return }
        pendingLog?.bytes += Int64(piece.count)
        if chunked { ResponseEncoder.appendChunk(piece, into: &channel.output) } else { channel.output.append(piece) }
    }

    func endPush(chunked: Bool) {
        if chunked { channel.output.append(ResponseEncoder.lastChunk) } else { state.endAfterOutput()?.abort() }
        bodyDone()
    }
}
