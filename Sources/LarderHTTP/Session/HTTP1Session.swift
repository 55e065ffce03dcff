import Dispatch
import LarderSupport
import Synchronization

/// Drives one HTTP/1.1 connection: carries bytes and events between its
/// `SocketChannel` and its `HTTP1ConnectionState`, and does what the state
/// says: calls the handler, feeds body sinks, sends answers (at once, or
/// when a deferred answer arrives) with their bodies (`OutgoingBody`),
/// counts and logs them (`AccessLog`), and closes.
///
/// One request is answered at a time: the next pipelined request is parsed
/// only once the answer to the one before is queued. While an answer is
/// awaited the connection is parked: no thread, no idle timeout (the
/// responder's own deadline instead), and a client that hangs up is noticed
/// by the channel's EOF.
///
/// All mutable state is confined to the channel's queue, hence `@unchecked Sendable`.
final class HTTP1Session: SocketChannelDelegate, HTTPResponderOwner, @unchecked Sendable {
    /// How long a connection lingers after its last answer once the server
    /// is stopping, instead of up to 2 s: long enough for the answer to
    /// reach a client on this machine or network before the close, short
    /// enough that a client that keeps its socket open does not hold up
    /// the exit (a client that closes ends the linger at once anyway).
    private static let shutdownLingerNanos: UInt64 = 200_000_000

    let channel: SocketChannel
    private let context: ServerContext
    private let onClose: @Sendable (HTTP1Session) -> Void
    private let log: AccessLog
    // `@exclusivity(unchecked)` on the hot per-request state: it is confined
    // to the channel's queue, and nothing called while it is being changed
    // (the parser, a route's body limit, a sink's write, a body stream's
    // read) can reach this session on that queue (answers from elsewhere
    // hop through `answerArrived`), so the runtime's access tracking on
    // every use would only cost instructions on each request.
    @exclusivity(unchecked) private var state: HTTP1ConnectionState
    /// Answers the request `state` awaits; set and cleared with it.
    @exclusivity(unchecked) private var responder: HTTPResponder?
    /// The last answered request's responder, reused for the next request
    /// if by then nothing else holds it (`nextResponder`). It holds this
    /// session strongly (its owner): dropped when the connection closes.
    @exclusivity(unchecked) private var answeredResponder: HTTPResponder?
    /// Body bytes of that request read so far (for its answer's observer).
    @exclusivity(unchecked) private var bodyBytesRead: Int64 = 0
    /// A response body still being sent; nothing else is answered meanwhile.
    @exclusivity(unchecked) private var outgoing: OutgoingBody?
    /// The log line of the answer whose body is going out.
    @exclusivity(unchecked) private var pendingLog: AccessLog.Pending?
    @exclusivity(unchecked) private var stoppedForOutput = false
    /// When a network fault's pause ends (the next slice of a paced body,
    /// either way); `.max`: none pending. The channel's one timer serves it.
    /// Unchecked exclusivity as `state`: read by `deadline()` on every request.
    @exclusivity(unchecked) private var faultWake: UInt64 = .max
    /// The request body is read at a fault's rate (`HTTPResponder.paceRequestBody`).
    @exclusivity(unchecked) private var bodyRate: ByteRate?
    /// The connection ends with a reset, not a close, once its output is
    /// out (a `drop` fault).
    private var resetAfterOutput = false

    init(fd: Int32, context: ServerContext, onClose: @escaping @Sendable (HTTP1Session) -> Void) {
        let configuration = context.configuration
        self.context = context
        self.onClose = onClose
        self.log = AccessLog(logger: context.logger)
        self.channel = SocketChannel(fd: fd,
                                     inputCapacity: configuration.maxRequestLineBytes + configuration.maxHeaderBytes + 4096,
                                     logger: context.logger, meter: context.metrics.shardForNewConnection())
        self.state = HTTP1ConnectionState(configuration: configuration)
        self.idleSince = Atomic(channel.now)
        channel.delegate = self
    }

    /// Call once, from any thread.
    func start() {
        channel.queue.async { [self] in channel.start(deadline: min(deadline(), now + SocketChannel.releaseAfterNanos)) }
    }

    private var now: UInt64 { channel.now }

    // MARK: - Idleness, for the connection cap

    /// `idleSince` while a request is in flight (read, parked, answered or
    /// its answer still going out).
    static let busy = UInt64.max
    /// When the connection last had no request in flight (it connected, or
    /// its last answer went out); `busy` while it has one. Written on the
    /// channel's queue, read by the listener at the connection cap to pick
    /// the longest-idle connection to close (`HTTPServer`): relaxed, since
    /// `evict` checks again on the queue before it closes anything.
    let idleSince: Atomic<UInt64>

    /// After a drive: a connection with nothing in flight and nothing to
    /// send is idle from now (the time stays that of its first idle moment).
    private func markIdleIfSo() {
        guard responder == nil, outgoing == nil, channel.output.isEmpty,
              idleSince.load(ordering: .relaxed) == Self.busy else { return }
        idleSince.store(now, ordering: .relaxed)
    }

    /// The listener is at its connection cap and chose this one, idle since
    /// `since`: it closes if it is still idle (no request read, parked or
    /// answered since), quietly, as an idle keep-alive connection may be.
    /// False when it was picked already or is busy now.
    func evict(idleSince since: UInt64) -> Bool {
        // Claimed by one eviction only: it reads as busy from here.
        guard idleSince.compareExchange(expected: since, desired: Self.busy, ordering: .relaxed).exchanged else { return false }
        channel.queue.async { [self] in
            guard !channel.closed else { return }
            if responder == nil && outgoing == nil && channel.output.isEmpty && state.request == nil {
                channel.close()
            } else {
                // A request arrived meanwhile: it stays, and is idle again after it.
                markIdleIfSo()
            }
        }
        return true
    }

    private var traffic: HTTP1ConnectionState.Traffic {
        let sending: HTTP1ConnectionState.Traffic.Sending
        switch outgoing {
        case nil: sending = .nothing
        case .push?: sending = .events
        default: sending = .body
        }
        return .init(lastActivity: channel.lastActivity, outputEmpty: channel.output.isEmpty, sending: sending)
    }

    private func deadline() -> UInt64 { min(state.deadline(traffic) { responder?.deadlineNanos }, faultWake) }

    // MARK: - Channel events

    func channelReceived(eof: Bool) { drive() }
    func channelWritable() { drive() }

    func channelClosed() {
        state.endAfterOutput()?.abort()
        outgoing?.cancel()
        outgoing = nil
        responder?.cancel()
        responder = nil
        answeredResponder = nil
        onClose(self)
    }

    func channelTimerFired() {
        let due = deadline()
        if now < due {
            // An early wake (to release the buffers, or a head's timeout
            // that no longer applies): a connection idle now lets its
            // buffers' pages go; a busy one looks again a little later.
            if channel.buffersReleased || responder != nil || outgoing != nil {
                // Released already; or a parked request or an answer going
                // out, which may last: no wakes meanwhile (the wake is set
                // again when a later answer arrives, `answerArrived`).
                channel.schedule(due)
            } else if state.isIdle(traffic, hasUnread: channel.hasUnread),
                      now >= channel.lastActivity + SocketChannel.releaseAfterNanos {
                channel.releaseIdleBuffers()
                channel.schedule(due)
            } else {
                channel.schedule(min(due, max(now, channel.lastActivity) + SocketChannel.releaseAfterNanos))
            }
            return
        }
        if now >= faultWake {
            // A paced body's next slice: read or send it.
            faultWake = .max
            channel.holdInput(false)
            drive()
            if !channel.closed { channel.schedule(max(deadline(), now + 1_000_000)) }
            return
        }
        if let r = responder, r.deadlineNanos.map({ now >= $0 }) == true, let answer = r.takeDeadline() {
            r.beginInline()
            answer.via.respond(answer.response)
            if let given = r.endInline() { send(given) }
            drive()
            if !channel.closed { channel.schedule(max(deadline(), now + 1_000_000)) }
            return
        }
        switch state.timedOut(traffic) {
        case .headTimedOut(let error):
            send(error.response)
            drive()
        case .close:
            channel.close()
        case .bodyStalled(let error, let sink):
            sink.abort()
            // The sink keeps the responder the route was handed alive.
            withExtendedLifetime(sink) { answerThroughResponder(error) }
            drive()
        case .quiet(let sending, let awaitingHead):
            if sending && channel.sendQueueShrank() {
                // A slow reader that keeps reading is not idle.
                channel.lastActivity = now
            } else if awaitingHead && channel.bytesWaiting() {
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

    // MARK: - Requests

    /// Answers what the buffered input allows, then sends.
    private func drive() {
        while !channel.closed {
            process()
            if channel.closed { return }
            guard pump() else { return }
            if channel.output.isEmpty && outgoing == nil && state.closesAfterOutput {
                if resetAfterOutput { return channel.resetWhenDelivered() }
                let idle = HTTP1ConnectionState.nanos(state.configuration.idleTimeout)
                channel.beginLingeringClose(idleTimeout: state.shuttingDown ? min(idle, Self.shutdownLingerNanos) : idle)
                return
            }
            if !stoppedForOutput { break }
        }
        guard !channel.closed else { return }
        if state.shuttingDown && state.isIdle(traffic, hasUnread: channel.hasUnread) {
            // The stop began while an answer was still being sent (so
            // `beginShutdown` left the connection open); it is out now and
            // the connection idle: end it instead of waiting for the grace.
            channel.beginLingeringClose(idleTimeout: Self.shutdownLingerNanos)
            return
        }
        if channel.peerClosed && !channel.hasUnread, let r = responder, !r.isFinished,
           let sink = state.bodySink as? HTTPTruncatedBodySink {
            // The client half-closed with the body incomplete: its sink answers.
            _ = state.answeredBeforeBody()
            r.beginInline()
            sink.bodyEndedEarly()
            if let answer = r.endInline() { send(answer) }
            return drive()
        }
        if channel.peerClosed && channel.output.isEmpty && (outgoing == nil || outgoing?.isPush == true) {
            // Nothing more can arrive. A request the client sent whole (its
            // body too: one cut short was answered or ends here) is
            // still answered, as is every complete one pipelined before its
            // end of input: a half-close (`shutdown(SHUT_WR)`, `nc -N`) is
            // not a hang-up, and a write must not be applied unanswered.
            // The close comes after the last answer (`answerArrived` drives
            // again). A request parked on a deadline (a watch, a journal
            // wait) and an event stream end instead: their client is only
            // waiting, and a half-close cannot be told from a hang-up.
            if outgoing == nil, state.inputUse != .body, let r = responder, r.deadlineNanos == nil {
                channel.scheduleIfEarlier(deadline())
                return
            }
            channel.close()
            return
        }
        markIdleIfSo()
        channel.scheduleIfEarlier(deadline())
    }

    private func process() {
        stoppedForOutput = false
        while !channel.closed {
            // Send what is queued before answering more: pipelined requests
            // must not pile up answers in memory. (A pushed body ends when
            // the application says so: nothing to loop for until then.)
            if outgoing?.isPush == true { return }
            if outgoing != nil || channel.output.count >= OutgoingBody.streamAhead { stoppedForOutput = true; return }
            switch state.inputUse {
            case .nothing:
                return
            case .head:
                guard channel.hasUnread else { return }
                switch state.readHead(channel.unread, inputIsFull: channel.inputIsFullFromStart, now: now) {
                case .needMore(let timerStarted):
                    if timerStarted { channel.scheduleIfEarlier(deadline()) }
                    return
                case .skip(let n):
                    channel.consume(n)
                case .reject(let error):
                    channel.discardInput()
                    send(error.response)
                case .request(let head, let consumed):
                    channel.consume(consumed)
                    begin(head)
                }
            case .body:
                guard channel.hasUnread else { return }
                if bodyRate != nil {
                    guard readPacedBody() else { return }
                } else {
                    readBody(channel.unread)
                }
            }
        }
    }

    private func begin(_ head: HTTPRequestHead) {
        idleSince.store(Self.busy, ordering: .relaxed)
        let handler = context.handler
        let responder = nextResponder()
        self.responder = responder
        bodyBytesRead = 0
        switch state.begin(head, now: now, routeLimit: { handler.maxBodyBytes(for: head) }) {
        case .reject(let error):
            responder.observe(with: handler.answerObserver(forRefused: head))
            send(error.response)
        case .handle(let bodyLimit):
            let action = handler.handle(head, responder)
            var answer: HTTPResponse?
            var sink: HTTPRequestBodySink?
            switch action {
            case .answer(let given):
                // Returned, not handed through the responder (one lock, no copies).
                if responder.endInline(answeredWith: given) { answer = given } else {
                    given.discardBody()
                    answer = responder.endInline()
                }
            case .receive(let s):
                sink = s
                answer = responder.endInline()
            case .ignore:
                answer = responder.endInline()
            }
            switch state.handled(head, bodyLimit: bodyLimit, sink: sink, answered: answer != nil) {
            case .none: break
            case .finish(let sink): finish(sink, responder)
            case .read(let sendContinue):
                let pace = responder.bodyBytesPerSecond
                if pace > 0 { bodyRate = ByteRate(bytesPerSecond: pace, start: now) }
                guard sendContinue else { break }
                if let gate = sink as? HTTPContinueGate { askBeforeContinue(gate, responder) }
                else { channel.output.append(HTTP1ConnectionState.continueLine) }
            case .abort(let sink): sink.abort()
            }
            if let answer { send(answer) }
        }
    }

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
        guard !channel.closed, self.responder === responder, !responder.isFinished,
              case .body = state.inputUse else { return }
        channel.output.append(HTTP1ConnectionState.continueLine)
        drive()
    }

    /// Tells a sink its body is complete and sends the answer it gives at once.
    private func finish(_ sink: HTTPRequestBodySink, _ responder: HTTPResponder) {
        responder.beginInline()
        sink.finish()
        if let answer = responder.endInline() { send(answer) }
    }

    /// Reads the body at its fault's rate: as much of the buffered input as
    /// the budget allows now. False when the budget is spent: reading from
    /// the socket is held until the next slice (`faultWake`), no thread waits.
    private func readPacedBody() -> Bool {
        guard var rate = bodyRate else { return false }
        let open = rate.allowance(now: now)
        let unread = channel.unread
        if open > 0 {
            readBody(UnsafeRawBufferPointer(rebasing: unread.prefix(Int(min(open, Int64(unread.count))))))
            let consumed = unread.count - channel.unread.count
            rate.moved(Int64(consumed))
            // The server is the slow one here, not the client.
            channel.lastActivity = now
            guard case .body = state.inputUse else {
                bodyRate = nil
                channel.holdInput(false)
                return true
            }
            bodyRate = rate
            if consumed > 0 { return true }
        }
        bodyRate = rate
        faultWake = min(faultWake, rate.nextSlice())
        channel.holdInput(true)
        channel.scheduleIfEarlier(faultWake)
        return false
    }

    private func readBody(_ input: UnsafeRawBufferPointer) {
        let sink = state.bodySink
        switch state.readBody(input, into: { bodyBytesRead += Int64($0.count); try sink?.write($0) }) {
        case .partial(let consumed):
            channel.consume(consumed)
        case .complete(let consumed, let finishing):
            channel.consume(consumed)
            if let finishing, let responder { finish(finishing, responder) }
        case .failed(let error, let sink):
            sink.abort()
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
        case .brokeAfterAnswer(let sink):
            sink?.abort()
        }
    }

    /// Answers the current request (which reached the handler) with an
    /// error found while its body was read, through its responder, so that
    /// middleware sees it like any other answer (and may hold it back).
    /// The rest of the body is not read: the connection closes after it.
    private func answerThroughResponder(_ error: HTTPError) {
        guard let r = responder else { return send(error.response) }
        r.beginInline()
        r.respondThroughChain(error.response)
        if let answer = r.endInline() { send(answer) }
    }

    /// A deferred answer (or deadline) arrived from another thread.
    func answerArrived() {
        guard !channel.closed, let r = responder else { return }
        channel.refreshNow()
        if let answer = r.takeAnswer() {
            // Answered before its body was read: the body is not wanted
            // (nor paced: reading goes on, to skip or drain it).
            if let sink = state.answeredBeforeBody() {
                sink.abort()
                bodyRate = nil
                channel.holdInput(false)
            }
            send(answer)
            drive()
            // The connection may be idle from here: look again after a
            // while (no timer change while one is due sooner).
            if !channel.closed && !channel.buffersReleased { channel.scheduleIfEarlier(now + SocketChannel.releaseAfterNanos) }
        } else if channel.peerClosed {
            // A deadline set after the client's end of input (a watch that
            // parked just then): whether to wait is decided again.
            drive()
        } else {
            channel.scheduleIfEarlier(deadline())
        }
    }

    // MARK: - Responses

    /// Queues the answer to the current request (or to input that never
    /// became one): head and (small) body into the output buffer, or the
    /// start of a streamed body.
    private func send(_ response: HTTPResponse) {
        if let fault = response.networkFault { return sendFaulted(response, fault) }
        let observer = responder?.answerObserver
        // Kept for the next request, without the observer (a journal's
        // record, which must not outlive its request on an idle connection).
        responder?.observe(with: nil)
        answeredResponder = responder
        responder = nil
        let start = state.startResponse(response, into: &channel.output)
        let request = start.request, code = response.status.code
        // Latency is the time to the answer, not to its last byte: a slow
        // reader's download and an event stream's life are not the server's.
        let started = request?.started ?? now, answeredAt = DispatchTime.now().uptimeNanoseconds
        let latency = answeredAt > started ? answeredAt - started : 0
        channel.meter.answered(request?.method, status: code, nanos: latency)
        let (body, bytes) = OutgoingBody.start(response.body, framing: start.framing, into: &channel.output)
        // Before anything of the answer is written to the socket (that is `pump`'s).
        if let observer, let request {
            observer.answered(HTTPAnsweredRequest(method: request.method, target: request.target, bodyBytes: bodyBytesRead,
                                                  nanos: latency, responseBodyBytes: bytes), with: response)
        }
        outgoing = body
        start.abort?.abort()
        guard let body else {
            log.answered(request, status: code, bytes: bytes, now: now)
            return
        }
        pendingLog = AccessLog.Pending(request: request, status: code, bytes: bytes)
        if case .push(let p, _) = body {
            p.bind { [weak self, queue = channel.queue] in
                guard let session = self else { return }
                queue.async { session.pushed() }
            }
            takePushed()
        }
    }

    /// The responder for a new request: the last answered one when no one
    /// else holds it any more (checked now, not as the answer is sent,
    /// when the call that made it still does), else a new one.
    private func nextResponder() -> HTTPResponder {
        defer { answeredResponder = nil }
        if isKnownUniquelyReferenced(&answeredResponder), let reused = answeredResponder {
            reused.resetForNextRequest()
            return reused
        }
        return HTTPResponder(owner: self, queue: channel.queue)
    }

    /// Acts out a fault of the network instead of sending `response` plainly.
    private func sendFaulted(_ response: HTTPResponse, _ fault: HTTPNetworkFault) {
        switch fault {
        case .reset:
            // No answer at all: the connection is reset once what was
            // queued before (earlier pipelined answers) is out.
            let observer = responder?.answerObserver
            responder = nil
            let (request, abort) = state.abandon()
            abort?.abort()
            if let observer, let request {
                observer.answered(HTTPAnsweredRequest(method: request.method, target: request.target, bodyBytes: bodyBytesRead,
                                                      nanos: latency(since: request.started), responseBodyBytes: 0),
                                  with: response)
            }
            response.discardBody()
            log.reset(request, now: now)
            resetAfterOutput = true
        case .truncate(let bytes):
            var cut = response
            cut.closeConnection = true
            sendShaped(cut, cutAfter: max(0, bytes), bytesPerSecond: nil)
        case .pace(let bytesPerSecond):
            sendShaped(response, cutAfter: nil, bytesPerSecond: bytesPerSecond)
        }
    }

    /// Sends the head as usual and the body through a `ShapedBody`: cut
    /// after `cutAfter` body bytes (the connection then closes), or paced.
    private func sendShaped(_ response: HTTPResponse, cutAfter: Int64?, bytesPerSecond: Int?) {
        var plain = response
        plain.networkFault = nil
        // An event stream is written by the application as it goes: it is
        // not shaped (a `drop` still applies to it).
        guard let (source, length) = ShapedBody.source(of: response.body) else { return send(plain) }
        let observer = responder?.answerObserver
        responder = nil
        let start = state.startResponse(plain, into: &channel.output)
        let request = start.request, code = response.status.code
        let nanos = latency(since: request?.started ?? now)
        channel.meter.answered(request?.method, status: code, nanos: nanos)
        if let observer, let request {
            // The answer as the application gave it, its network fault too.
            var full: Int64 = 0
            if case .length = start.framing { full = length ?? 0 }
            observer.answered(HTTPAnsweredRequest(method: request.method, target: request.target, bodyBytes: bodyBytesRead,
                                                  nanos: nanos, responseBodyBytes: full), with: response)
        }
        start.abort?.abort()
        let sized: Int64?, chunked: Bool
        switch start.framing {
        case .none:
            source.close()
            log.answered(request, status: code, bytes: 0, now: now)
            return
        case .length: sized = length; chunked = false
        case .chunked: sized = nil; chunked = true
        case .untilClose: sized = nil; chunked = false
        }
        outgoing = .shaped(ShapedBody(source: source, length: sized, chunked: chunked, cutAfter: cutAfter,
                                      rate: bytesPerSecond.map { ByteRate(bytesPerSecond: $0, start: now) }))
        pendingLog = AccessLog.Pending(request: request, status: code, bytes: 0)
    }

    /// Nanoseconds from `started` to now: a request's latency to its answer.
    private func latency(since started: UInt64) -> UInt64 {
        let answeredAt = DispatchTime.now().uptimeNanoseconds
        return answeredAt > started ? answeredAt - started : 0
    }

    /// The body going out is complete: its log line.
    private func bodyDone() {
        outgoing = nil
        if let pending = pendingLog { log.answered(pending, now: now) }
        pendingLog = nil
    }

    /// The body going out failed after its head: the one error line, then
    /// the connection is cut (no last chunk, or short of its length), which
    /// is how the client learns the body is incomplete.
    private func bodyFailed(_ error: any Error) {
        log.bodyFailed(pendingLog?.request, error)
        pendingLog = nil
        outgoing?.cancel()
        outgoing = nil
        channel.close()
    }

    // MARK: - Pushed bodies

    /// Sends what the application pushed since the last look (on the queue).
    private func pushed() {
        channel.refreshNow()
        takePushed()
        drive()
    }

    private func takePushed() {
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

    private func appendPushed(_ piece: [UInt8], chunked: Bool) {
        guard !piece.isEmpty else { return }
        pendingLog?.bytes += Int64(piece.count)
        if chunked { ResponseEncoder.appendChunk(piece, into: &channel.output) } else { channel.output.append(piece) }
    }

    private func endPush(chunked: Bool) {
        if chunked { channel.output.append(ResponseEncoder.lastChunk) } else { state.endAfterOutput()?.abort() }
        bodyDone()
    }

    // MARK: - Sending

    /// Sends queued output, refilling it from the outgoing body. Returns
    /// true when everything is sent, false when waiting for the socket (or closed).
    private func pump() -> Bool {
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

    // MARK: - Closing

    /// Graceful shutdown: close now if idle or only waiting (a parked
    /// request, an event stream), else after the current answer; a lingering
    /// close (now or after that answer) lasts at most `shutdownLingerNanos`.
    func beginShutdown() {
        channel.queue.async { [self] in
            guard !channel.closed else { return }
            if channel.lingering {
                _ = state.shutdown(traffic, hasUnread: channel.hasUnread)
                channel.limitLinger(to: Self.shutdownLingerNanos)
                return
            }
            if state.shutdown(traffic, hasUnread: channel.hasUnread) { channel.close() }
        }
    }

    /// Closes at once (shutdown after the grace period).
    func forceClose() {
        channel.queue.async { [self] in channel.close() }
    }
}
