/// A body sink that decides later, from any thread, whether the client
/// should send its body. For a request with `Expect: 100-continue` the
/// connection does not send `100 Continue` at once: it calls
/// `whenBodyWanted`, and sends it only when the sink calls `proceed`. The
/// sink may instead answer through its responder (a failed precondition:
/// 412 before the body is sent); the body is then not read, and the
/// connection closes after the answer, as for any early answer.
///
/// Nothing waits meanwhile: the connection keeps reading, so a client that
/// sends its body without waiting for `100 Continue` is served as usual
/// (a `proceed` after the whole body is in sends nothing; one while the
/// body is still arriving sends `100 Continue`, which RFC 9110 §10.1.1
/// allows). The sink must settle which of its early answer and `finish`
/// wins: once it answered, `finish` must not write.
/// Without `Expect: 100-continue` the gate is not asked.
public protocol HTTPContinueGate: HTTPRequestBodySink {
    /// Called once, on the connection's loop; `proceed` may be called
    /// from any thread, at most once.
    func whenBodyWanted(_ proceed: @escaping @Sendable () -> Void)
}
