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

extension WireFailure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .cannotConnect(let reason): reason
        case .closedBeforeAnswer(let sent): sent ? "the connection closed before the answer came"
            : "the connection closed before the request was sent"
        case .cutShort: "the answer ended early: the connection closed before its whole body came"
        case .timedOut(let seconds): "no answer for \(seconds) s: the request timed out"
        case .malformed(let reason): "the answer is not HTTP: \(reason)"
        case .cancelled: "cancelled"
        }
    }
}
