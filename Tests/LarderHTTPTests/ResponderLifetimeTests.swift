import Dispatch
@testable import LarderHTTP
import LarderTestSupport
import Testing

private final class NullOwner: HTTPResponderOwner, @unchecked Sendable {
    func answerArrived() {}
}

/// Regression (review): a responder with a deadline (a watch) answered by `respond`
/// keeps itself alive (state.deadline.via == self), and a whenCancelled
/// handler that captures an object holding the responder is never released.
@Suite(.blockingLane) struct ResponderLifetimeTests {
    @Test func answeredWatchResponderIsReleased() {
        let owner = NullOwner()
        weak var weakResponder: HTTPResponder?
        do {
            let r = HTTPResponder(owner: owner, executor: DispatchQueue(label: "t"))
            weakResponder = r
            _ = r.endInline()
            r.answer(at: .now() + 30, with: HTTPResponse(status: .notModified))
            r.respond(HTTPResponse(status: .ok))   // the key changed
            _ = r.takeAnswer()                      // the session sent it and dropped `current`
        }
        #expect(weakResponder == nil, "responder leaked through state.deadline.via")
    }

    @Test func answeredResponderDropsCancelHandlers() {
        final class Holder: @unchecked Sendable { var r: HTTPResponder?; init(_ r: HTTPResponder) { self.r = r } }
        let owner = NullOwner()
        weak var weakResponder: HTTPResponder?
        do {
            let r = HTTPResponder(owner: owner, executor: DispatchQueue(label: "t"))
            weakResponder = r
            _ = r.endInline()
            let h = Holder(r)                      // like KeyWatch holding its responder
            r.whenCancelled { _ = h }
            r.respond(HTTPResponse(status: .ok))
            _ = r.takeAnswer()
        }
        #expect(weakResponder == nil, "responder leaked through cancelHandlers")
    }
}
