import Dispatch
import LarderSupport

/// Faults of the network (`--allow-faults`), acted out on the connection:
/// a reset instead of the answer, or its body cut short or paced.
extension HTTP1Session {
    /// Acts out a fault of the network instead of sending `response` plainly.
    func sendFaulted(_ response: HTTPResponse, _ fault: HTTPNetworkFault) {
        switch fault {
        case .reset:
            // No answer at all: the connection is reset once what was
            // queued before (earlier pipelined answers) is out.
            let observer = responder?.answerObserver
            responder = nil
            let (request, abort) = state.abandon()
            abort?.abort()
            if let observer, let request {
                observer.answered(HTTPAnsweredRequest(method: request.method, target: request.target,
                                                  version: request.http11 ? .http11 : .http10, head: answeredHead.take() ?? [], bodyBytes: bodyBytesRead,
                                                      nanos: latency(since: request.started), responseBodyBytes: 0),
                                  with: response)
            }
            answeredHead = nil
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
    func sendShaped(_ response: HTTPResponse, cutAfter: Int64?, bytesPerSecond: Int?) {
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
            observer.answered(HTTPAnsweredRequest(method: request.method, target: request.target,
                                                  version: request.http11 ? .http11 : .http10, head: answeredHead.take() ?? [], bodyBytes: bodyBytesRead,
                                                  nanos: nanos, responseBodyBytes: full), with: response)
        }
        answeredHead = nil
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
    func latency(since started: UInt64) -> UInt64 {
        let answeredAt = DispatchTime.now().uptimeNanoseconds
        return answeredAt > started ? answeredAt - started : 0
    }
}
