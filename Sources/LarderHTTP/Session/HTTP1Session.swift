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
/// All mutable state is confined to the channel's loop, hence `@unchecked Sendable`.
/// Its members are internal, not private, only so that its extensions
/// (`HTTP1Session+Idleness`, `+NetworkFaults`, `+PushedBodies`) reach them;
/// nothing outside the session touches them but through its loop.
final class HTTP1Session: SocketChannelDelegate, HTTPResponderOwner, @unchecked Sendable {
    /// How long a connection lingers after its last answer once the server
    /// is stopping, instead of up to 2 s: long enough for the answer to
    /// reach a client on this machine or network before the close, short
    /// enough that a client that keeps its socket open does not hold up
    /// the exit (a client that closes ends the linger at once anyway).
    static let shutdownLingerNanos: UInt64 = 200_000_000

    let channel: SocketChannel
    let context: ServerContext
    let onClose: @Sendable (HTTP1Session) -> Void
    let log: AccessLog
    // `@exclusivity(unchecked)` on the hot per-request state: it is confined
    // to the channel's loop, and nothing called while it is being changed
    // (the parser, a route's body limit, a sink's write, a body stream's
    // read) can reach this session on that loop (answers from elsewhere
    // hop through `answerArrived`), so the runtime's access tracking on
    // every use would only cost instructions on each request.
    @exclusivity(unchecked) var state: HTTP1ConnectionState
    /// Answers the request `state` awaits; set and cleared with it.
    @exclusivity(unchecked) var responder: HTTPResponder?
    /// The last answered request's responder, reused for the next request
    /// if by then nothing else holds it (`nextResponder`). It holds this
    /// session strongly (its owner): dropped when the connection closes.
    @exclusivity(unchecked) var answeredResponder: HTTPResponder?
    /// Body bytes of that request read so far (for its answer's observer).
    @exclusivity(unchecked) var bodyBytesRead: Int64 = 0
    /// The head's bytes of the request `state` awaits, for its answer's
    /// observer (`HTTPAnsweredRequest.head`): kept here, once, rather than
    /// in `state`'s request, which is copied on its way through the state
    /// machine (a retain and a release each time); taken by the answer.
    @exclusivity(unchecked) var answeredHead: [UInt8]?
    /// A response body still being sent; nothing else is answered meanwhile.
    @exclusivity(unchecked) var outgoing: OutgoingBody?
    /// The log line of the answer whose body is going out.
    @exclusivity(unchecked) var pendingLog: AccessLog.Pending?
    @exclusivity(unchecked) var stoppedForOutput = false
    /// When a network fault's pause ends (the next slice of a paced body,
    /// either way); `.max`: none pending. The channel's one timer serves it.
    /// Unchecked exclusivity as `state`: read by `deadline()` on every request.
    @exclusivity(unchecked) var faultWake: UInt64 = .max
    /// The request body is read at a fault's rate (`HTTPResponder.paceRequestBody`).
    @exclusivity(unchecked) var bodyRate: ByteRate?
    /// The connection ends with a reset, not a close, once its output is
    /// out (a `drop` fault).
    var resetAfterOutput = false

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
        channel.loop.post { [self] in channel.start(deadline: min(deadline(), now + SocketChannel.releaseAfterNanos)) }
    }

    var now: UInt64 { channel.now }

    /// When the connection last had no request in flight (it connected, or
    /// its last answer went out); `busy` while it has one. Written on the
    /// channel's loop, read by the listener at the connection cap to pick
    /// the longest-idle connection to close (`HTTPServer`): relaxed, since
    /// `evict` checks again on the loop before it closes anything.
    let idleSince: Atomic<UInt64>

    var traffic: HTTP1ConnectionState.Traffic {
        let sending: HTTP1ConnectionState.Traffic.Sending
        switch outgoing {
        case nil: sending = .nothing
        case .push?: sending = .events
        default: sending = .body
        }
        return .init(lastActivity: channel.lastActivity, outputEmpty: channel.output.isEmpty, sending: sending)
    }

    func deadline() -> UInt64 { min(state.deadline(traffic) { responder?.deadlineNanos }, faultWake) }

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
    func drive() {
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

    func process() {
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

    func begin(_ head: HTTPRequestHead) {
        idleSince.store(Self.busy, ordering: .relaxed)
        let handler = context.handler
        let responder = nextResponder()
        self.responder = responder
        bodyBytesRead = 0
        answeredHead = head.headers.bytes
        switch state.begin(head, now: now, routeLimit: { handler.maxBodyBytes(for: head) }) {
        case .reject(let error):
            responder.observe(with: handler.answerObserver(forRefused: head))
            send(error.response)
        case .handle(let bodyLimit):
            let action = handler.handle(head, responder)
            var answer: HTTPResponse?
            var sink: HTTPRequestBodySink?
            // Consumed: the answer moves out of the action, not copied (a
            // copy of a response is a retain of each of its references).
            switch consume action {
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
    func send(_ response: HTTPResponse) {
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
            observer.answered(HTTPAnsweredRequest(method: request.method, target: request.target,
                                                  version: request.http11 ? .http11 : .http10, head: answeredHead.take() ?? [], bodyBytes: bodyBytesRead,
                                                  nanos: latency, responseBodyBytes: bytes), with: response)
        }
        answeredHead = nil  // unobserved: not kept while the connection idles
        outgoing = body
        start.abort?.abort()
        guard let body else {
            log.answered(request, status: code, bytes: bytes, now: now)
            return
        }
        pendingLog = AccessLog.Pending(request: request, status: code, bytes: bytes)
        if case .push(let p, _) = body {
            p.bind { [weak self, loop = channel.loop] in
                guard let session = self else { return }
                loop.execute { session.pushed() }
            }
            takePushed()
        }
    }

    /// The responder for a new request: the last answered one when no one
    /// else holds it any more (checked now, not as the answer is sent,
    /// when the call that made it still does), else a new one.
    func nextResponder() -> HTTPResponder {
        defer { answeredResponder = nil }
        if isKnownUniquelyReferenced(&answeredResponder), let reused = answeredResponder {
            reused.resetForNextRequest()
            return reused
        }
        return HTTPResponder(owner: self, executor: channel.loop)
    }
}
