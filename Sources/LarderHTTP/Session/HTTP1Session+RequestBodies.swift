import Dispatch
import LarderSupport

/// Request bodies: read into the request's sink (at a fault's rate when
/// one is set), `100 Continue` when a sink asks for its body, and the
/// answer to a body that broke. On the channel's loop.
extension HTTP1Session {
    /// `Expect: 100-continue` with a sink that decides later: `100 Continue`
    /// goes out when it says so, if the request is still waiting for its
    /// body by then (not answered, its body not already sent).
    func askBeforeContinue(_ gate: HTTPContinueGate, _ responder: HTTPResponder) {
        gate.whenBodyWanted { [weak self, loop = channel.loop] in
            guard let session = self else { return }
            loop.execute { session.continueWanted(by: responder) }
        }
    }

    /// On the loop: sends `100 Continue` if the request is still waiting for its body.
    func continueWanted(by responder: HTTPResponder) {
        guard !channel.closed, self.responder === responder, !responder.isFinished,
              case .body = state.inputUse else { return }
        channel.output.append(HTTP1ConnectionState.continueLine)
        drive()
    }

    /// Tells a sink its body is complete and sends the answer it gives at once.
    func finish(_ sink: HTTPRequestBodySink, _ responder: HTTPResponder) {
        responder.beginInline()
        sink.finish()
        if let answer = responder.endInline() { send(answer) }
    }

    /// Reads the body at its fault's rate: as much of the buffered input as
    /// the budget allows now. False when the budget is spent: reading from
    /// the socket is held until the next slice (`faultWake`), no thread waits.
    func readPacedBody() -> Bool {
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

    func readBody(_ input: UnsafeRawBufferPointer) {
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
    func answerThroughResponder(_ error: HTTPError) {
        guard let r = responder else { return send(error.response) }
        r.beginInline()
        r.respondThroughChain(error.response)
        if let answer = r.endInline() { send(answer) }
    }
}
