import Dispatch
import LarderSupport

/// The HTTP/1.1 half of a connection: parses requests out of the channel's
/// input, hands them to the handler, receives bodies, and sends answers in
/// order — at once, or when a deferred answer arrives — with their bodies
/// (from memory, pulled from a stream, or pushed by the application).
///
/// One request is answered at a time: the next pipelined request is parsed
/// only once the answer to the one before is queued. While an answer is
/// awaited the connection is parked: no thread, no idle timeout (the
/// responder's own deadline instead), and a client that hangs up is noticed
/// by the channel's EOF.
///
/// All mutable state is confined to the channel's queue, hence `@unchecked Sendable`.
final class HTTP1Session: SocketChannelDelegate, HTTPResponderOwner, @unchecked Sendable {
    /// Body bytes of a streamed response buffered ahead of the socket.
    private static let streamAhead = 256 * 1024
    /// A body that is answered without being read is skipped when at most
    /// this large, otherwise the connection closes.
    private static let maxSkippedBody: Int64 = 1 << 20
    /// How long a connection lingers after its last answer once the server
    /// is stopping, instead of up to 2 s: long enough for the answer to
    /// reach a client on this machine or network before the close, short
    /// enough that a client that keeps its socket open does not hold up
    /// the exit (a client that closes ends the linger at once anyway).
    private static let shutdownLingerNanos: UInt64 = 200_000_000

    let channel: SocketChannel
    private let context: ServerContext
    private let configuration: HTTPServerConfiguration
    private let onClose: @Sendable (HTTP1Session) -> Void
    private var parser: HTTPRequestParser

    private enum Phase {
        /// Waiting for (or reading) a request head; the time its first byte came.
        case head(startedAt: UInt64?)
        /// Reading a body into the sink, or skipping it when there is none
        /// (the request was answered without it).
        case body(BodyDecoder, HTTPRequestBodySink?)
        /// A final answer is queued; nothing more is read as requests.
        case closing
    }
    private var phase = Phase.head(startedAt: nil)

    private struct RequestInfo {
        let method: HTTPMethod
        let target: String
        let started: UInt64
        let keepAlive: Bool
        let http11: Bool
    }
    /// The request awaiting its answer (parked when that answer is deferred).
    private var current: (info: RequestInfo, responder: HTTPResponder, mustClose: Bool)?

    private enum Outgoing {
        case pull(HTTPBodyStream, remaining: Int64)
        /// Pulled until `read` returns 0: chunked, or ended by closing.
        case pullUnsized(HTTPBodyStream, chunked: Bool)
        case push(HTTPPushStream, chunked: Bool)
        /// A file region going out with `sendfile`: where it is, what is left.
        case file(HTTPFileRegion, offset: Int64, remaining: Int64)
    }
    /// A response body still being sent; nothing else is answered meanwhile.
    private var outgoing: Outgoing?
    /// Log line of a streamed response, written when its last byte is queued.
    private var pendingLog: (info: RequestInfo?, status: Int, bytes: Int64)?
    private var pushedBytes: Int64 = 0
    private var closeAfterOutput = false
    private var shuttingDown = false
    private var stoppedForOutput = false

    init(fd: Int32, context: ServerContext, onClose: @escaping @Sendable (HTTP1Session) -> Void) {
        self.context = context
        self.configuration = context.configuration
        self.onClose = onClose
        self.channel = SocketChannel(fd: fd,
                                     inputCapacity: configuration.maxRequestLineBytes + configuration.maxHeaderBytes + 4096,
                                     logger: context.logger, meter: context.metrics.shardForNewConnection())
        self.parser = HTTPRequestParser(configuration: configuration)
        channel.delegate = self
    }

    /// Call once, from any thread.
    func start() {
        channel.queue.async { [self] in channel.start(deadline: deadline()) }
    }

    private var now: UInt64 { channel.now }

    // MARK: - Channel events

    func channelReceived(eof: Bool) { drive() }
    func channelWritable() { drive() }

    func channelClosed() {
        if case .body(_, let sink) = phase { sink?.abort() }
        phase = .closing
        switch outgoing {
        case .pull(let s, _), .pullUnsized(let s, _): s.close()
        case .push(let p, _): p.connectionClosed()
        case .file(let f, _, _): f.close()
        case nil: break
        }
        outgoing = nil
        current?.responder.cancel()
        current = nil
        onClose(self)
    }

    func channelTimerFired() {
        let due = deadline()
        if now < due {
            channel.schedule(due)
            return
        }
        if let c = current, c.responder.deadlineNanos.map({ now >= $0 }) == true, let due = c.responder.takeDeadline() {
            c.responder.beginInline()
            due.via.respond(due.response)
            if let answer = c.responder.endInline() { send(answer) }
            drive()
            if !channel.closed { channel.schedule(max(deadline(), now + 1_000_000)) }
            return
        }
        switch phase {
        case .head(let started?) where current == nil && channel.output.isEmpty && outgoing == nil:
            _ = started
            phase = .head(startedAt: nil)
            respondWithError(HTTPError(.requestTimeout, .requestTimeout,
                                       "the request head did not arrive within \(configuration.headerTimeout) seconds",
                                       closeConnection: true))
            drive()
        case .body(_, nil):
            // The request was answered already (its body was being skipped):
            // a late 408 would be a stray response.
            channel.close()
        case .body(_, let sink?):
            sink.abort()
            phase = .head(startedAt: nil)
            // The sink keeps the responder the route was handed alive.
            withExtendedLifetime(sink) {
                answerThroughResponder(HTTPError(.requestTimeout, .requestTimeout,
                                                 "the request body stalled for \(configuration.idleTimeout) seconds",
                                                 closeConnection: true))
            }
            drive()
        default:
            if (!channel.output.isEmpty || outgoing != nil) && channel.sendQueueShrank() {
                // A slow reader that keeps reading is not idle.
                channel.lastActivity = now
            } else if case .head = phase, current == nil, channel.output.isEmpty, outgoing == nil, channel.bytesWaiting() {
                // Data arrived but its read event has not run yet (a busy
                // machine): not idle either.
                channel.lastActivity = now
            } else {
                // Idle keep-alive, or a client that stopped reading.
                channel.close()
            }
        }
        if !channel.closed { channel.schedule(max(deadline(), now + 1_000_000)) }
    }

    /// When the timer must fire next, from the phase.
    private func deadline() -> UInt64 {
        let idle = channel.lastActivity + Self.nanos(configuration.idleTimeout)
        // An event stream may be quiet for long (whatever its framing): only
        // a reader that stops taking what was sent is timed out.
        if case .push = outgoing { return channel.output.isEmpty ? .max : idle }
        switch phase {
        case .head(let started):
            if !channel.output.isEmpty { return idle }
            if let c = current { return c.responder.deadlineNanos ?? .max }
            if case .push = outgoing { return .max }
            if let started, outgoing == nil { return started + Self.nanos(configuration.headerTimeout) }
            return idle
        case .body, .closing:
            return idle
        }
    }

    private static func nanos(_ seconds: Double) -> UInt64 {
        UInt64(min(max(seconds, 0), 1e9) * 1e9)
    }

    // MARK: - Requests

    /// Answers what the buffered input allows, then sends.
    private func drive() {
        while !channel.closed {
            process()
            if channel.closed { return }
            guard pump() else { return }
            if channel.output.isEmpty && outgoing == nil && closeAfterOutput {
                let idle = Self.nanos(configuration.idleTimeout)
                channel.beginLingeringClose(idleTimeout: shuttingDown ? min(idle, Self.shutdownLingerNanos) : idle)
                return
            }
            if !stoppedForOutput { break }
        }
        guard !channel.closed else { return }
        if shuttingDown, case .head(let started) = phase, started == nil, current == nil, outgoing == nil,
           channel.output.isEmpty, !channel.hasUnread {
            // The stop began while an answer was still being sent (so
            // `beginShutdown` left the connection open); it is out now and
            // the connection idle: end it instead of waiting for the grace.
            channel.beginLingeringClose(idleTimeout: Self.shutdownLingerNanos)
            return
        }
        if channel.peerClosed && channel.output.isEmpty {
            // The client is gone; nothing more can arrive, and a parked
            // request or an event stream has no one to answer.
            var pushing = false
            if case .push = outgoing { pushing = true }
            if outgoing == nil || pushing {
                channel.close()
                return
            }
        }
        channel.scheduleIfEarlier(deadline())
    }

    private func process() {
        stoppedForOutput = false
        while !channel.closed {
            // Send what is queued before answering more: pipelined requests
            // must not pile up answers in memory.
            // (A pushed body ends when the application says so: nothing to
            // loop for until then.)
            if case .push = outgoing { return }
            if outgoing != nil || channel.output.count >= Self.streamAhead { stoppedForOutput = true; return }
            if closeAfterOutput { return }
            switch phase {
            case .head(let started):
                // Parked: the answer to the request before comes first.
                if current != nil { return }
                guard channel.hasUnread else { return }
                switch parser.parse(channel.unread) {
                case .incomplete:
                    if channel.inputIsFullFromStart {
                        // The limits are smaller than the buffer, so this only
                        // happens with input the parser cannot use; never spin on it.
                        channel.discardInput()
                        respondWithError(HTTPError(.headersTooLarge, .headersTooLarge,
                                                   "the request head does not fit in \(channel.inputCapacity) bytes",
                                                   closeConnection: true))
                        return
                    }
                    if started == nil {
                        phase = .head(startedAt: now)
                        channel.scheduleIfEarlier(deadline())
                    }
                    return
                case .skip(let n):
                    channel.consume(n)
                case .failure(let error):
                    phase = .head(startedAt: nil)
                    channel.discardInput()
                    respondWithError(error)
                case .complete(let head, let consumed):
                    channel.consume(consumed)
                    phase = .head(startedAt: nil)
                    begin(head)
                }
            case .body:
                guard channel.hasUnread else { return }
                feedBody()
            case .closing:
                return
            }
        }
    }

    private func begin(_ head: HTTPRequestHead) {
        let info = RequestInfo(method: head.method, target: head.target, started: now,
                               keepAlive: head.keepAlive && !shuttingDown, http11: head.version == .http11)
        let responder = HTTPResponder(owner: self, queue: channel.queue)
        current = (info, responder, false)
        var bodyLimit = configuration.maxBodyBytes
        if head.isChunked || (head.contentLength ?? 0) > bodyLimit, let own = context.handler.maxBodyBytes(for: head) {
            bodyLimit = own
        }
        if let length = head.contentLength, length > bodyLimit {
            respondWithError(HTTPError(.payloadTooLarge, .payloadTooLarge,
                                       "the body is \(length) bytes; at most \(bodyLimit) are accepted",
                                       closeConnection: true))
            return
        }
        let action = context.handler.handle(head, responder)
        let answer = responder.endInline()
        switch action {
        case .receive(let sink) where answer == nil:
            guard head.hasBody else {
                finish(sink, responder)
                return
            }
            if head.expectsContinue {
                if let gate = sink as? HTTPContinueGate { askBeforeContinue(gate, responder) } else { channel.output.append(Self.continueLine) }
            }
            phase = .body(head.isChunked
                          ? BodyDecoder(chunkedWithMaxBytes: bodyLimit, maxTrailerBytes: configuration.maxHeaderBytes)
                          : BodyDecoder(contentLength: head.contentLength ?? 0, maxBytes: bodyLimit),
                          sink)
        case .receive(let sink):
            // Answered and asked for the body: the answer wins.
            sink.abort()
            fallthrough
        case .ignore:
            if head.hasBody {
                if head.expectsContinue || head.isChunked || (head.contentLength ?? 0) > Self.maxSkippedBody {
                    current?.mustClose = true
                } else {
                    phase = .body(BodyDecoder(contentLength: head.contentLength ?? 0, maxBytes: configuration.maxBodyBytes), nil)
                }
            }
        }
        if let answer { send(answer) }
    }

    private static let continueLine = "HTTP/1.1 100 Continue\r\n\r\n"

    /// `Expect: 100-continue` with a sink that decides later: `100 Continue`
    /// goes out when it says so, if the request is still waiting for its
    /// body by then (not answered, its body not already sent).
    private func askBeforeContinue(_ gate: HTTPContinueGate, _ responder: HTTPResponder) {
        gate.whenBodyWanted { [weak self, queue = channel.queue] in
            guard let session = self else { return }
            queue.async { session.continueWanted(by: responder) }
        }
    }

    /// On the queue: sends `100 Continue` if the request is still waiting for its body.
    private func continueWanted(by responder: HTTPResponder) {
        guard !channel.closed, let c = current, c.responder === responder, !responder.isFinished,
              case .body = phase else { return }
        channel.output.append(Self.continueLine)
        drive()
    }

    /// Tells a sink its body is complete and sends the answer it gives at once.
    private func finish(_ sink: HTTPRequestBodySink, _ responder: HTTPResponder) {
        responder.beginInline()
        sink.finish()
        if let answer = responder.endInline() { send(answer) }
    }

    private func feedBody() {
        guard case .body(var decoder, let sink) = phase else { return }
        do {
            let used = try decoder.decode(channel.unread) { chunk in try sink?.write(chunk) }
            channel.consume(used)
            guard decoder.isDone else {
                phase = .body(decoder, sink)
                return
            }
            phase = .head(startedAt: nil)
            if let sink, let c = current { finish(sink, c.responder) }
        } catch {
            sink?.abort()
            phase = .head(startedAt: nil)
            guard sink != nil, current != nil else {
                // A skipped body went wrong after its answer was queued.
                closeAfterOutput = true
                phase = .closing
                return
            }
            var httpError: HTTPError
            if let e = error as? HTTPError {
                httpError = e
            } else {
                context.logger.error("request body failed: \(error)")
                httpError = HTTPError(.internalServerError, .internalError, "\(error)")
            }
            httpError.closeConnection = true
            // The sink keeps the responder the route was handed alive.
            withExtendedLifetime(sink) { answerThroughResponder(httpError) }
        }
    }

    /// Answers the current request (which reached the handler) with an
    /// error found while its body was read, through its responder, so that
    /// middleware sees it like any other answer (and may hold it back).
    /// The rest of the body is not read: the connection closes after it.
    private func answerThroughResponder(_ error: HTTPError) {
        guard let c = current else { return respondWithError(error) }
        current?.mustClose = true
        c.responder.beginInline()
        c.responder.respondThroughChain(error.response)
        if let answer = c.responder.endInline() { send(answer) }
    }

    /// A deferred answer (or deadline) arrived from another thread.
    func answerArrived() {
        guard !channel.closed, let c = current else { return }
        channel.refreshNow()
        if let answer = c.responder.takeAnswer() {
            if case .body(_, let sink?) = phase {
                // Answered before its body was read: the body is not wanted.
                sink.abort()
                phase = .head(startedAt: nil)
                current?.mustClose = true
            }
            send(answer)
            drive()
        } else {
            channel.scheduleIfEarlier(deadline())
        }
    }

    // MARK: - Responses

    /// Answers the current request with an error (or a request that never
    /// got as far as a head).
    private func respondWithError(_ error: HTTPError) {
        send(error.response)
    }

    /// Queues the answer to the current request: head and (small) body into
    /// the output buffer, or the start of a streamed body.
    private func send(_ response: HTTPResponse) {
        let info = current?.info
        let mustClose = current?.mustClose ?? false
        current = nil
        let close = response.closeConnection || mustClose || !(info?.keepAlive ?? false) || shuttingDown
        let code = response.status.code
        // Latency is the time to the answer, not to its last byte: a slow
        // reader's download and an event stream's life are not the server's.
        let started = info?.started ?? now, answeredAt = DispatchTime.now().uptimeNanoseconds
        channel.meter.answered(info?.method, status: code, nanos: answeredAt > started ? answeredAt - started : 0)
        let framing = ResponseEncoder.encodeHead(response, into: &channel.output, isHead: info?.method == .head,
                                                 close: close, chunkedAllowed: info?.http11 ?? false)
        var sentBytes: Int64 = 0
        var streaming = false
        switch (framing, response.body) {
        case (.length(let n), .bytes(let b)):
            channel.output.append(b)
            sentBytes = n
        case (.length(let n), .stream(let s, _)) where n > 0:
            outgoing = .pull(s, remaining: n)
            sentBytes = n
            streaming = true
        case (.length(let n), .file(let f)) where n > 0:
            // The prefix rides with the head; the file follows once it is out.
            channel.output.append(f.prefix)
            outgoing = .file(f, offset: f.offset, remaining: f.length)
            sentBytes = n
            streaming = true
        case (.chunked, .unsizedStream(let s)), (.untilClose, .unsizedStream(let s)):
            if case .chunked = framing { outgoing = .pullUnsized(s, chunked: true) } else { outgoing = .pullUnsized(s, chunked: false) }
            streaming = true
        case (.chunked, .push(let p)), (.untilClose, .push(let p)):
            let chunked: Bool
            if case .chunked = framing { chunked = true } else { chunked = false }
            streaming = true
            pushedBytes = 0
            outgoing = .push(p, chunked: chunked)
            p.bind { [weak self, queue = channel.queue] in
                guard let session = self else { return }
                queue.async { session.pushed() }
            }
            takePushed()
        default:
            response.discardBody()
        }
        if close {
            closeAfterOutput = true
            if case .body(_, let sink) = phase { sink?.abort() }
            phase = .closing
        }
        if streaming {
            pendingLog = (info, code, sentBytes)
        } else {
            logRequest(info, status: code, bytes: sentBytes)
        }
    }

    private func logRequest(_ info: RequestInfo?, status: Int, bytes: Int64) {
        guard context.logger.enabled(.info) else { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - (info?.started ?? now)) / 1e6
        let ms = (elapsed * 100).rounded() / 100
        let target = info.map { TargetRedaction.redact($0.target) } ?? "-"
        context.logger.info("\(info?.method.description ?? "-") \(target) \(status) \(bytes)B \(ms)ms")
    }

    // MARK: - Pushed bodies

    /// Sends what the application pushed since the last look (on the queue).
    private func pushed() {
        channel.refreshNow()
        takePushed()
        drive()
    }

    private func takePushed() {
        guard !channel.closed, case .push(let p, _) = outgoing else { return }
        let (bytes, finished, overflowed) = p.take()
        if overflowed || channel.output.count + bytes.count > p.maxBuffered {
            // The reader fell too far behind: a last word, then close.
            appendPushed(p.overflowTail)
            endPush()
            closeAfterOutput = true
            phase = .closing
            p.connectionClosed()
        } else {
            appendPushed(bytes)
            if finished { endPush() }
        }
    }

    private func appendPushed(_ piece: [UInt8]) {
        guard case .push(_, let chunked) = outgoing, !piece.isEmpty else { return }
        pushedBytes += Int64(piece.count)
        if chunked { ResponseEncoder.appendChunk(piece, into: &channel.output) } else { channel.output.append(piece) }
    }

    private func endPush() {
        guard case .push(_, let chunked) = outgoing else { return }
        if chunked { channel.output.append(ResponseEncoder.lastChunk) } else { closeAfterOutput = true }
        outgoing = nil
        if let log = pendingLog { logRequest(log.info, status: log.status, bytes: pushedBytes) }
        pendingLog = nil
    }

    // MARK: - Sending

    /// Sends queued output, refilling it from a pulled body. Returns true
    /// when everything is sent, false when waiting for the socket (or closed).
    private func pump() -> Bool {
        while true {
            if case .pull(let s, var remaining) = outgoing {
                do {
                    while channel.output.count < Self.streamAhead && remaining > 0 {
                        let want = Int(min(Int64(64 * 1024), remaining))
                        let n = try channel.output.fill(max: want) { try s.read(into: $0) }
                        if n == 0 {
                            throw HTTPError(.internalServerError, .internalError, "the body ended \(remaining) bytes early")
                        }
                        remaining -= Int64(n)
                    }
                } catch {
                    // Headers are out already: all that is left is to cut the connection.
                    context.logger.error("response body of \(pendingLog?.info.map { TargetRedaction.redact($0.target) } ?? "?") failed: \(error)")
                    s.close()
                    outgoing = nil
                    channel.close()
                    return false
                }
                if remaining == 0 {
                    s.close()
                    outgoing = nil
                    if let log = pendingLog { logRequest(log.info, status: log.status, bytes: log.bytes) }
                    pendingLog = nil
                } else {
                    outgoing = .pull(s, remaining: remaining)
                }
            }
            if case .pullUnsized(let s, let chunked) = outgoing, !pullUnsized(s, chunked: chunked) { return false }
            if case .file(let f, var offset, var remaining) = outgoing {
                let done = channel.flush(file: f.fd, offset: &offset, remaining: &remaining)
                guard !channel.closed else { return false }
                guard done else {
                    outgoing = .file(f, offset: offset, remaining: remaining)
                    return false
                }
                f.close()
                outgoing = nil
                if let log = pendingLog { logRequest(log.info, status: log.status, bytes: log.bytes) }
                pendingLog = nil
                return true
            }
            guard channel.flush() else { return false }
            switch outgoing {
            case .pull, .pullUnsized: continue
            default: return true
            }
        }
    }

    /// Refills the output from a body of unknown length, up to `streamAhead`;
    /// at its end, the last chunk (or a close, for HTTP/1.0). False when the
    /// stream failed and the connection was cut.
    private func pullUnsized(_ s: HTTPBodyStream, chunked: Bool) -> Bool {
        var ended = false
        do {
            while channel.output.count < Self.streamAhead {
                let n = chunked ? try channel.output.fillChunk(max: 64 * 1024) { try s.read(into: $0) }
                                : try channel.output.fill(max: 64 * 1024) { try s.read(into: $0) }
                if n == 0 { ended = true; break }
                pendingLog?.bytes += Int64(n)
            }
        } catch {
            // Headers are out already: cutting the connection (no last chunk)
            // is how the client learns the body is incomplete.
            context.logger.error("response body of \(pendingLog?.info?.target ?? "?") failed: \(error)")
            s.close()
            outgoing = nil
            channel.close()
            return false
        }
        guard ended else { return true }
        s.close()
        outgoing = nil
        if chunked { channel.output.append(ResponseEncoder.lastChunk) } else { closeAfterOutput = true }
        if let log = pendingLog { logRequest(log.info, status: log.status, bytes: log.bytes) }
        pendingLog = nil
        return true
    }

    // MARK: - Closing

    /// Graceful shutdown: close now if idle or only waiting (a parked
    /// request, an event stream), else after the current answer; a lingering
    /// close (now or after that answer) lasts at most `shutdownLingerNanos`.
    func beginShutdown() {
        channel.queue.async { [self] in
            guard !channel.closed else { return }
            shuttingDown = true
            if channel.lingering {
                channel.limitLinger(to: Self.shutdownLingerNanos)
                return
            }
            // An event stream ends at shutdown, whatever its framing.
            if case .push = outgoing { channel.close(); return }
            guard case .head(let started) = phase else { return }
            let idle = started == nil && !channel.hasUnread && channel.output.isEmpty && outgoing == nil && current == nil
            // Parked with nothing left to send: the earlier answers are out.
            let waiting = current != nil && outgoing == nil && channel.output.isEmpty
            if idle || waiting { channel.close() }
        }
    }

    /// Closes at once (shutdown after the grace period).
    func forceClose() {
        channel.queue.async { [self] in channel.close() }
    }
}
