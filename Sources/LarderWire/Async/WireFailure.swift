/// How an exchange on a `WireConnection` failed.
public enum WireFailure: Error, Sendable, Equatable {
    /// The connection could not be made (refused, unreachable, no such host).
    case cannotConnect(String)
    /// The connection closed or was reset before any byte of the answer
    /// came. `requestSent`: the whole request had gone out, so the server
    /// may have acted on it.
    case closedBeforeAnswer(requestSent: Bool)
    /// The head came, and the connection closed before the body's end.
    case cutShort
    /// Nothing arrived for the exchange's idle timeout.
    case timedOut(seconds: Double)
    /// The bytes are not an HTTP/1.1 response.
    case malformed(String)
    /// The exchange was cancelled by its caller.
    case cancelled
}
