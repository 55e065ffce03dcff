/// The body of an answer that a network fault shapes (`truncate`, `pace`),
/// pulled from one stream whatever its kind was (bytes, stream, file), so
/// that cutting and pacing are done in one place for all of them.
///
/// Confined to its connection's queue (it lives in the session's outgoing
/// body), like the stream it reads.
final class ShapedBody {
    let source: HTTPBodyStream
    /// Body bytes still to send of a sized body (its Content-Length); nil:
    /// unsized, sent until `read` returns 0.
    private var remaining: Int64?
    let chunked: Bool
    /// `truncate`: body bytes still to send before the connection is cut.
    private var untilCut: Int64?
    /// `pace`: the budget of the body's bytes.
    private var rate: ByteRate?

    init(source: HTTPBodyStream, length: Int64?, chunked: Bool, cutAfter: Int64?, rate: ByteRate?) {
        self.source = source
        self.remaining = length
        self.chunked = chunked
        self.untilCut = cutAfter
        self.rate = rate
    }

    /// Turns a response body into one pulled stream of its bytes; nil for
    /// a push body (an event stream), which is written by the application
    /// and not shaped.
    static func source(of body: HTTPResponseBody) -> (HTTPBodyStream, length: Int64?)? {
        switch body {
        case .empty: return (MemoryBodyStream([]), 0)
        case .bytes(let b): return (MemoryBodyStream(b), Int64(b.count))
        case .stream(let s, let length): return (s, length)
        case .unsizedStream(let s): return (s, nil)
        case .file(let f): return (FileRegionStream(f), f.totalLength)
        case .push: return nil
        }
    }

    enum Step {
        /// `bytes` more went into the output; call again once it is sent.
        case more(bytes: Int64)
        /// The budget is spent until this time (uptime nanoseconds).
        case paused(until: UInt64)
        /// The whole body is queued; `closeAfter`: its end is the
        /// connection's (an unsized body without chunked coding).
        case done(bytes: Int64, closeAfter: Bool)
        /// `truncate` reached: the connection closes after the output.
        case cut(bytes: Int64)
        case failed(any Error)
    }

    /// Moves up to `max` body bytes into `output`, as the fault allows at `now`.
    func advance(into output: inout OutputBuffer, max: Int, now: UInt64) -> Step {
        var want = Int64(max)
        if let remaining {
            if remaining == 0 { return finish(into: &output) }
            want = min(want, remaining)
        }
        if let untilCut {
            if untilCut == 0 { source.close(); return .cut(bytes: 0) }
            want = min(want, untilCut)
        }
        if rate != nil {
            let open = rate!.allowance(now: now)
            if open == 0 { return .paused(until: rate!.nextSlice()) }
            want = min(want, open)
        }
        let n: Int
        do {
            n = chunked ? try output.fillChunk(max: Int(want)) { try source.read(into: $0) }
                        : try output.fill(max: Int(want)) { try source.read(into: $0) }
        } catch {
            return .failed(error)
        }
        if n == 0 {
            guard let remaining else { return finish(into: &output) }
            return .failed(HTTPError(.internalServerError, .internalError, "the body ended \(remaining) bytes early"))
        }
        remaining = remaining.map { $0 - Int64(n) }
        untilCut = untilCut.map { $0 - Int64(n) }
        rate?.moved(Int64(n))
        if untilCut == 0 && remaining != 0 {
            source.close()
            return .cut(bytes: Int64(n))
        }
        return .more(bytes: Int64(n))
    }

    private func finish(into output: inout OutputBuffer) -> Step {
        source.close()
        if chunked { output.append(ResponseEncoder.lastChunk) }
        return .done(bytes: 0, closeAfter: remaining == nil && !chunked)
    }

    func cancel() { source.close() }
}
