/// The request/response sequence of one HTTP/1.1 connection, as a value:
/// which request is read or awaits its answer, how its body is framed and
/// whether it is read or skipped, whether the connection outlives an
/// answer, and when it times out.
///
/// Pure: no sockets, no Dispatch, no calls into the application. The driver
/// (`HTTP1Session`) hands it input bytes and events with the time, and does
/// what each answer says (consume input, call the handler, send, close).
/// Body sinks pass through it only as values to hand back.
///
/// Invariants: one request at a time (`request` is the one awaiting its
/// answer; the next head is parsed only once it is answered); once
/// `closesAfterOutput` is set no more requests are read; a body is read only
/// in `.body`, and into a sink only while its request is unanswered.
struct HTTP1ConnectionState {
    /// A body that is answered without being read is skipped when at most
    /// this large, otherwise the connection closes.
    static let maxSkippedBody: Int64 = 1 << 20
    static let continueLine = "HTTP/1.1 100 Continue\r\n\r\n"

    enum Phase {
        /// Waiting for (or reading) a request head; the time its first byte came.
        case head(startedAt: UInt64?)
        /// Reading a body into the sink, or skipping it when there is none
        /// (the request was answered without it).
        case body(BodyDecoder, HTTPRequestBodySink?)
        /// A final answer is queued; nothing more is read as requests.
        case closing
    }

    /// What the access log and the metrics need of a request, and how it is answered.
    struct Request {
        let method: HTTPMethod
        let target: String
        let started: UInt64
        let keepAlive: Bool
        let http11: Bool
        /// The connection closes after the answer (an unread body).
        var mustClose = false
    }

    let configuration: HTTPServerConfiguration
    private var parser: HTTPRequestParser
    private(set) var phase = Phase.head(startedAt: nil)
    /// The request awaiting its answer (parked when that answer is deferred).
    private(set) var request: Request?
    private(set) var closesAfterOutput = false
    private(set) var shuttingDown = false
    /// A request head has arrived on this connection. Until then it is
    /// given the header timeout from its start, not the idle timeout: a
    /// socket that never speaks is not a keep-alive client between requests.
    private(set) var heardFrom = false

    init(configuration: HTTPServerConfiguration) {
        self.configuration = configuration
        parser = HTTPRequestParser(configuration: configuration)
    }

    // MARK: - Reading

    /// What buffered input is for right now.
    enum InputUse { case nothing, head, body }

    var inputUse: InputUse {
        if closesAfterOutput { return .nothing }
        switch phase {
        case .head: return request == nil ? .head : .nothing  // parked: the answer comes first
        case .body: return .body
        case .closing: return .nothing
        }
    }

    enum HeadStep {
        /// More input is needed; `timerStarted` when this input began a head
        /// (its deadline is now due earlier).
        case needMore(timerStarted: Bool)
        /// Empty lines before a request line: consume them and ask again.
        case skip(Int)
        /// Answer this error and drop the unread input; the connection ends.
        case reject(HTTPError)
        /// A request head: consume `consumed` bytes, then `begin` it.
        case request(HTTPRequestHead, consumed: Int)
    }

    /// Parses the next head out of `input` (`inputIsFull`: the input buffer
    /// holds nothing else and has no room left). Only when `inputUse == .head`.
    mutating func readHead(_ input: UnsafeRawBufferPointer, inputIsFull: Bool, now: UInt64) -> HeadStep {
        switch parser.parse(input) {
        case .incomplete:
            if inputIsFull {
                // The limits are smaller than the buffer, so this only
                // happens with input the parser cannot use; never spin on it.
                phase = .head(startedAt: nil)
                return .reject(HTTPError(.headersTooLarge, .headersTooLarge,
                                         "the request head does not fit in \(input.count) bytes", closeConnection: true))
            }
            guard case .head(nil) = phase else { return .needMore(timerStarted: false) }
            phase = .head(startedAt: now)
            return .needMore(timerStarted: true)
        case .skip(let n):
            return .skip(n)
        case .failure(let error):
            phase = .head(startedAt: nil)
            return .reject(error)
        case .complete(let head, let consumed):
            phase = .head(startedAt: nil)
            return .request(head, consumed: consumed)
        }
    }

    enum Begin {
        /// Call the handler; a body is limited to `bodyLimit` bytes.
        case handle(bodyLimit: Int64)
        /// Answer this error without calling the handler.
        case reject(HTTPError)
    }

    /// A head was read: it becomes the request awaiting an answer.
    /// `routeLimit` is asked only for a chunked body or a Content-Length over
    /// the server's limit (`HTTPRequestHandler.maxBodyBytes(for:)`).
    mutating func begin(_ head: HTTPRequestHead, now: UInt64, routeLimit: () -> Int64?) -> Begin {
        heardFrom = true
        request = Request(method: head.method, target: head.target, started: now,
                          keepAlive: head.keepAlive && !shuttingDown, http11: head.version == .http11)
        var bodyLimit = configuration.maxBodyBytes
        if head.isChunked || (head.contentLength ?? 0) > bodyLimit, let own = routeLimit() {
            bodyLimit = own
        }
        if let length = head.contentLength, length > bodyLimit {
            return .reject(HTTPError(.payloadTooLarge, .payloadTooLarge,
                                     "the body is \(length) bytes; at most \(bodyLimit) are accepted", closeConnection: true))
        }
        return .handle(bodyLimit: bodyLimit)
    }

    enum BodyPlan {
        /// Nothing to read (or the connection closes after the answer).
        case none
        /// No body: tell the sink its body is complete.
        case finish(HTTPRequestBodySink)
        /// Read the body into the sink, after `100 Continue` when asked for.
        case read(sendContinue: Bool)
        /// The handler answered and asked for the body: the answer wins;
        /// abort the sink.
        case abort(HTTPRequestBodySink)
    }

    /// The handler returned: `sink` when it asked for the body, `answered`
    /// when its answer is already given.
    mutating func handled(_ head: HTTPRequestHead, bodyLimit: Int64, sink: HTTPRequestBodySink?, answered: Bool) -> BodyPlan {
        if let sink, !answered {
            guard head.hasBody else { return .finish(sink) }
            phase = .body(head.isChunked
                          ? BodyDecoder(chunkedWithMaxBytes: bodyLimit, maxTrailerBytes: configuration.maxHeaderBytes)
                          : BodyDecoder(contentLength: head.contentLength ?? 0, maxBytes: bodyLimit),
                          sink)
            return .read(sendContinue: head.expectsContinue)
        }
        if head.hasBody {
            if head.expectsContinue || head.isChunked || (head.contentLength ?? 0) > Self.maxSkippedBody {
                request?.mustClose = true
            } else {
                phase = .body(BodyDecoder(contentLength: head.contentLength ?? 0, maxBytes: configuration.maxBodyBytes), nil)
            }
        }
        return sink.map { .abort($0) } ?? .none
    }

    /// The sink body bytes go to (nil while a body is skipped).
    var bodySink: HTTPRequestBodySink? {
        if case .body(_, let sink) = phase { return sink }
        return nil
    }

    enum BodyStep {
        /// Consume this much; the body goes on.
        case partial(consumed: Int)
        /// Consume this much; the body is complete. `finish` is its sink
        /// when the request still awaits its answer.
        case complete(consumed: Int, finish: HTTPRequestBodySink?)
        /// The body broke while read into `sink` (abort it): answer `error`
        /// through the request's responder; the connection closes after it.
        case failed(any Error, sink: HTTPRequestBodySink)
        /// A skipped body broke after its answer was queued: the connection
        /// closes once that answer is out.
        case brokeAfterAnswer(abort: HTTPRequestBodySink?)
    }

    /// Decodes body bytes from `input`, handing them to `write`. Only when
    /// `inputUse == .body`.
    mutating func readBody(_ input: UnsafeRawBufferPointer, into write: (UnsafeRawBufferPointer) throws -> Void) -> BodyStep {
        guard case .body(var decoder, let sink) = phase else { return .partial(consumed: 0) }
        do {
            let used = try decoder.decode(input, emit: write)
            guard decoder.isDone else {
                phase = .body(decoder, sink)
                return .partial(consumed: used)
            }
            phase = .head(startedAt: nil)
            return .complete(consumed: used, finish: request == nil ? nil : sink)
        } catch {
            phase = .head(startedAt: nil)
            guard let sink, request != nil else {
                endAfterOutput()
                return .brokeAfterAnswer(abort: sink)
            }
            request?.mustClose = true
            return .failed(error, sink: sink)
        }
    }

    /// An answer arrived while the body was still read into a sink: the
    /// body is not wanted; returns the sink to abort. The connection closes
    /// after the answer.
    mutating func answeredBeforeBody() -> HTTPRequestBodySink? {
        guard case .body(_, let sink?) = phase else { return nil }
        phase = .head(startedAt: nil)
        request?.mustClose = true
        return sink
    }

    // MARK: - Answering

    struct ResponseStart {
        /// The request answered (nil: an error before any head).
        let request: Request?
        /// How the body follows the head.
        let framing: ResponseEncoder.Framing
        /// The connection ends after this answer.
        let closes: Bool
        /// A body sink to abort: the connection closes before it is read.
        let abort: HTTPRequestBodySink?
    }

    /// Writes the head of the answer to the current request into `output`
    /// and decides whether the connection outlives it. The request is no
    /// longer awaited.
    mutating func startResponse(_ response: HTTPResponse, into output: inout OutputBuffer) -> ResponseStart {
        let answered = request.take()  // moved out: no copy of its references
        let closes = response.closeConnection || (answered?.mustClose ?? false) || !(answered?.keepAlive ?? false) || shuttingDown
        let framing = ResponseEncoder.encodeHead(response, into: &output, isHead: answered?.method == .head,
                                                 close: closes, chunkedAllowed: answered?.http11 ?? false)
        let abort = closes ? endAfterOutput() : nil
        return ResponseStart(request: answered, framing: framing, closes: closes, abort: abort)
    }

    /// The current request is answered by resetting the connection (a fault
    /// of the network): it is no longer awaited, nothing more is read.
    /// Returns it (for the log) and a body sink to abort, if one was fed.
    mutating func abandon() -> (request: Request?, abort: HTTPRequestBodySink?) {
        let abandoned = request.take()
        return (abandoned, endAfterOutput())
    }

    /// Nothing more is read: the connection closes once its output is out.
    /// Returns a body sink to abort, if one was being fed.
    @discardableResult
    mutating func endAfterOutput() -> HTTPRequestBodySink? {
        let sink = bodySink
        closesAfterOutput = true
        phase = .closing
        return sink
    }

    // MARK: - Time

    /// What the driver knows of the connection's traffic when it asks about time.
    struct Traffic {
        /// Last time bytes moved in either direction.
        var lastActivity: UInt64
        var outputEmpty: Bool
        var sending: Sending

        enum Sending { case nothing, body, events }
    }

    /// When the timer must fire next. `answerDue`: when the parked
    /// request's deadline answer is due, if it has one (asked only then).
    /// Inlined: called on the session's `state` (which the session's other
    /// files reach too), a call would be handed a copy of the whole state,
    /// about 300 instructions a request (callgrind, 1 KiB GET).
    @inline(__always)
    func deadline(_ traffic: Traffic, answerDue: () -> UInt64?) -> UInt64 {
        let idle = traffic.lastActivity + Self.nanos(configuration.idleTimeout)
        // An event stream may be quiet for long (whatever its framing): only
        // a reader that stops taking what was sent is timed out.
        if traffic.sending == .events { return traffic.outputEmpty ? .max : idle }
        switch phase {
        case .head(let started):
            if !traffic.outputEmpty { return idle }
            if request != nil { return answerDue() ?? .max }
            if let started, traffic.sending == .nothing { return started + Self.nanos(configuration.headerTimeout) }
            // Silent since it connected: the header timeout, counted from then.
            if !heardFrom && traffic.sending == .nothing { return traffic.lastActivity + Self.nanos(configuration.headerTimeout) }
            return idle
        case .body, .closing:
            return idle
        }
    }

    enum Timeout {
        /// The head did not arrive in time: answer this 408; the connection ends.
        case headTimedOut(HTTPError)
        /// The body stalled while read into `sink` (abort it): answer this
        /// 408 through the request's responder; the connection ends.
        case bodyStalled(HTTPError, sink: HTTPRequestBodySink)
        /// Close now: a skipped body stalled (its answer is out, a late 408
        /// would be a stray response).
        case close
        /// Idle, or a reader that stopped: close unless the socket shows
        /// progress (`sending`: output waits, check the send queue;
        /// `awaitingHead`: input may be waiting unread).
        case quiet(sending: Bool, awaitingHead: Bool)
    }

    /// The deadline passed (and no deadline answer was due first).
    mutating func timedOut(_ traffic: Traffic) -> Timeout {
        let nothingOut = traffic.outputEmpty && traffic.sending == .nothing
        switch phase {
        case .head(_?) where request == nil && nothingOut:
            phase = .head(startedAt: nil)
            return .headTimedOut(HTTPError(.requestTimeout, .requestTimeout,
                                           "the request head did not arrive within \(configuration.headerTimeout) seconds",
                                           closeConnection: true))
        case .body(_, nil):
            return .close
        case .body(_, let sink?):
            phase = .head(startedAt: nil)
            request?.mustClose = true
            return .bodyStalled(HTTPError(.requestTimeout, .requestTimeout,
                                          "the request body stalled for \(configuration.idleTimeout) seconds",
                                          closeConnection: true), sink: sink)
        default:
            var awaitingHead = false
            if case .head = phase, request == nil, nothingOut { awaitingHead = true }
            return .quiet(sending: !nothingOut, awaitingHead: awaitingHead)
        }
    }

    static func nanos(_ seconds: Double) -> UInt64 {
        UInt64(min(max(seconds, 0), 1e9) * 1e9)
    }

    // MARK: - Shutdown

    /// Between requests with nothing read, parked or sent.
    func isIdle(_ traffic: Traffic, hasUnread: Bool) -> Bool {
        guard case .head(nil) = phase else { return false }
        return request == nil && traffic.sending == .nothing && traffic.outputEmpty && !hasUnread
    }

    /// The server is stopping: no request is kept alive after its answer.
    /// True when the connection may close at once: idle, only waiting (a
    /// parked request whose earlier answers are out), or an event stream.
    mutating func shutdown(_ traffic: Traffic, hasUnread: Bool) -> Bool {
        shuttingDown = true
        if traffic.sending == .events { return true }
        guard case .head = phase else { return false }
        let waiting = request != nil && traffic.sending == .nothing && traffic.outputEmpty
        return isIdle(traffic, hasUnread: hasUnread) || waiting
    }
}
