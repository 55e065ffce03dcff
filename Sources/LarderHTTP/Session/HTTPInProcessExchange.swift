import Dispatch
import LarderSupport
#if canImport(Glibc)
import Glibc
#endif

/// One request served to an `HTTPRequestHandler` with no socket, as a
/// connection serves it: the head parsed by the server's own parser and
/// held to its limits, the handler called on a serial queue with a real
/// `HTTPResponder`, the body handed to the handler's sink, the answer taken
/// however it comes (returned, given inline, given later from any thread,
/// or a deadline answer at its time), the answer's observer told, and the
/// answer's body read whole. What only a socket does is not done: the
/// answer keeps its `networkFault` for the caller to look at, and a pushed
/// body (an event stream) is what was ready when the answer was taken.
///
/// The in-process tester (`LarderTesting`) is built on it: route-level
/// tests through the real router and middleware, in the spirit of
/// HummingbirdTesting's router tester.
///
/// Confined to `queue`: every property below is read and written on it
/// only (hence `@unchecked Sendable`).
package final class HTTPInProcessExchange: HTTPResponderOwner, @unchecked Sendable {
    /// An answer as the exchange took it, its body read.
    package struct Answer: Sendable {
        package let status: HTTPStatus
        package let headers: [(String, String)]
        package let body: [UInt8]
        /// What the connection would have done to the wire (a reset, a truncation, a pace).
        package let networkFault: HTTPNetworkFault?
    }

    private let queue = DispatchQueue(label: "larder.http.in-process")
    private let handler: any HTTPRequestHandler
    private let configuration: HTTPServerConfiguration
    private var responder: HTTPResponder?
    private var request: HTTPRequestHead?
    private var bodyBytes: Int64 = 0
    private var started: UInt64 = 0
    private var deadlineTimer: DispatchSourceTimer?
    private var delivered: ((Answer) -> Void)?

    private init(handler: any HTTPRequestHandler, configuration: HTTPServerConfiguration) {
        self.handler = handler
        self.configuration = configuration
    }

    /// Serves `head` (a request line and header section, CRLF-terminated,
    /// as a client sends them) with `body` to `handler`, and returns the
    /// answer once one is given. A head the parser refuses is answered as
    /// the connection answers it (400, 414, 431, 501, ...).
    package static func serve(head: [UInt8], body: [UInt8], to handler: any HTTPRequestHandler,
                              configuration: HTTPServerConfiguration = HTTPServerConfiguration()) async -> Answer {
        let exchange = HTTPInProcessExchange(handler: handler, configuration: configuration)
        return await withCheckedContinuation { continuation in
            exchange.queue.async {
                exchange.delivered = { continuation.resume(returning: $0) }
                exchange.begin(head: head, body: body)
            }
        }
    }

    // MARK: - On `queue`

    private func begin(head bytes: [UInt8], body: [UInt8]) {
        started = DispatchTime.now().uptimeNanoseconds
        var parser = HTTPRequestParser(configuration: configuration)
        var offset = 0
        var parsed: HTTPRequestHead?
        while parsed == nil {
            let result = bytes[offset...].withUnsafeBytes { parser.parse($0) }
            switch result {
            case .skip(let n): offset += n
            case .complete(let head, _): parsed = head
            case .failure(let error): return deliver(error.response)
            case .incomplete:
                return deliver(HTTPError(.badRequest, .invalidArgument, "the request head is incomplete").response)
            }
        }
        guard let head = parsed else { return }
        request = head
        let responder = HTTPResponder(owner: self, executor: queue)
        self.responder = responder
        // The connection's limit, and the route's for a larger body (`HTTP1ConnectionState.begin`).
        var limit = configuration.maxBodyBytes
        if Int64(body.count) > limit, let own = handler.maxBodyBytes(for: head) { limit = own }
        if Int64(body.count) > limit {
            responder.observe(with: handler.answerObserver(forRefused: head))
            return deliver(HTTPError(.payloadTooLarge, .payloadTooLarge,
                                     "the body is \(body.count) bytes; at most \(limit) are accepted", closeConnection: true).response)
        }
        var answer: HTTPResponse?
        switch handler.handle(head, responder) {
        case .answer(let given):
            if responder.endInline(answeredWith: given) { answer = given } else {
                given.discardBody()
                answer = responder.endInline()
            }
        case .ignore:
            answer = responder.endInline()
        case .receive(let sink):
            answer = responder.endInline()
            if answer == nil { feed(body, to: sink, responder) } else { sink.abort() }
            if answer == nil, responder.isFinished { answer = responder.takeAnswer() }
        }
        if let answer { return deliver(answer) }
        scheduleDeadline()
    }

    /// The body to the sink, as the connection reads it: written, then
    /// finished inline; a sink that throws ends the request with its error
    /// (through the responder, so middleware sees it).
    private func feed(_ body: [UInt8], to sink: HTTPRequestBodySink, _ responder: HTTPResponder) {
        do {
            if !body.isEmpty { try body.withUnsafeBytes { try sink.write($0) } }
            bodyBytes = Int64(body.count)
        } catch {
            sink.abort()
            var httpError = (error as? HTTPError) ?? HTTPError(.internalServerError, .internalError, "\(error)")
            httpError.closeConnection = true
            responder.beginInline()
            responder.respondThroughChain(httpError.response)
            if let answer = responder.endInline() { deliver(answer) }
            return
        }
        // Answered while its body was written: the body is not wanted.
        guard !responder.isFinished else { sink.abort(); return }
        responder.beginInline()
        sink.finish()
        if let answer = responder.endInline() { deliver(answer) }
    }

    /// An answer given later, from another thread.
    func answerArrived() {
        guard let responder, let answer = responder.takeAnswer() else { return scheduleDeadline() }
        deliver(answer)
    }

    /// A deadline answer (`HTTPResponder.answer(at:with:)`) is given at its time.
    private func scheduleDeadline() {
        deadlineTimer?.cancel()
        deadlineTimer = nil
        guard let responder, delivered != nil, let due = responder.deadlineNanos else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: due))
        timer.setEventHandler { [weak self] in
            guard let self, let responder = self.responder, let answer = responder.takeDeadline() else { return }
            responder.beginInline()
            answer.via.respond(answer.response)
            if let given = responder.endInline() { self.deliver(given) }
        }
        deadlineTimer = timer
        timer.resume()
    }

    private func deliver(_ response: HTTPResponse) {
        guard let delivered else { return response.discardBody() }
        self.delivered = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        let body = Self.read(response.body)
        if let observer = responder?.answerObserver, let request {
            let now = DispatchTime.now().uptimeNanoseconds
            observer.answered(HTTPAnsweredRequest(method: request.method, target: request.target,
                                                  version: request.version, head: request.headers.bytes, bodyBytes: bodyBytes,
                                                  nanos: now > started ? now - started : 0, responseBodyBytes: Int64(body.count)),
                              with: response)
        }
        responder?.observe(with: nil)
        responder = nil
        delivered(Answer(status: response.status, headers: response.headers + (response.headerBlock?.fields ?? []), body: body,
                         networkFault: response.networkFault))
    }

    /// A body's bytes, read whole (a file region with `pread`, a stream to
    /// its end); its resources released.
    private static func read(_ body: HTTPResponseBody) -> [UInt8] {
        switch body {
        case .empty: return []
        case .bytes(let bytes): return bytes
        case .stream(let stream, _), .unsizedStream(let stream):
            defer { stream.close() }
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while let n = try? buffer.withUnsafeMutableBytes({ try stream.read(into: $0) }), n > 0 { out += buffer[..<n] }
            return out
        case .push(let push):
            defer { push.connectionClosed() }
            return push.take().bytes
        case .file(let region):
            defer { region.close() }
            var out = region.prefix
            var buffer = [UInt8](repeating: 0, count: Int(min(region.length, 1 << 20)))
            var done: Int64 = 0
            while done < region.length {
                let want = Int(min(Int64(buffer.count), region.length - done))
                let n = buffer.withUnsafeMutableBytes { pread(region.fd, $0.baseAddress, want, off_t(region.offset + done)) }
                guard n > 0 else { break }
                out += buffer[..<n]
                done += Int64(n)
            }
            return out
        }
    }
}
