import LarderHTTP
import LarderRouting
import LarderValueFile
import LarderStoreVocabulary

/// Makes the HTTP answer out of a store's answer (`StoreReply`). The one
/// place a route meets the store's two timings: an answer the store gives
/// now is the route's `.respond`, one it gives later goes out through the
/// request's responder, and the route is written once for both. A struct,
/// so an answer given now (a cached GET) costs no allocation.
protocol StoreAnswer: Sendable {
    associatedtype Value: Sendable
    func response(_ result: Result<Value, any Error>) throws(HTTPError) -> HTTPResponse
}

extension StoreAnswer {
    /// The response, with a thrown `HTTPError` as its own response.
    func responseOrError(_ result: Result<Value, any Error>) -> HTTPResponse {
        do throws(HTTPError) {
            return try response(result)
        } catch {
            return error.response
        }
    }
}

/// A `StoreAnswer` made of a closure: for routes off the hot path.
struct ClosureAnswer<Value: Sendable>: StoreAnswer {
    let body: @Sendable (Result<Value, any Error>) throws(HTTPError) -> HTTPResponse
    func response(_ result: Result<Value, any Error>) throws(HTTPError) -> HTTPResponse { try body(result) }
}

extension RouteAnswer {
    /// The route's answer to `reply`: `.respond` when the store answered
    /// now (an error thrown, as any route throws it), else `.later`,
    /// through `responder`.
    static func after<Answer: StoreAnswer>(_ reply: StoreReply<Answer.Value>, _ answer: Answer,
                                           _ responder: HTTPResponder) throws(HTTPError) -> RouteAnswer {
        switch reply {
        case .now(let result):
            return .respond(try answer.response(result))
        case .later(let pending):
            pending.whenDone { responder.respond(answer.responseOrError($0)) }
            return .later
        }
    }

    /// `after(_:_:_:)` with the answer as a closure.
    static func after<Value: Sendable>(_ reply: StoreReply<Value>, _ responder: HTTPResponder,
                                       _ body: @escaping @Sendable (Result<Value, any Error>) throws(HTTPError) -> HTTPResponse)
        throws(HTTPError) -> RouteAnswer {
        try after(reply, ClosureAnswer(body: body), responder)
    }
}

extension HTTPResponder {
    /// Answers with what `answer` makes of `reply`, whenever it comes (for
    /// a body sink, which answers through its responder either way).
    func respond<Answer: StoreAnswer>(after reply: StoreReply<Answer.Value>, _ answer: Answer) {
        reply.deliver(to: AnswerReceiver(answer: answer, responder: self))
    }
}

/// Sends what an answer makes of a store's result.
private struct AnswerReceiver<Answer: StoreAnswer>: StoreReplyReceiver {
    let answer: Answer
    let responder: HTTPResponder
    func receive(_ result: Result<Answer.Value, any Error>) { responder.respond(answer.responseOrError(result)) }
}
