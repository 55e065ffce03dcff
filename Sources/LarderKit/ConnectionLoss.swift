/// How a connection broke after a request went out (`LarderError.connectionLost`).
public enum ConnectionLoss: Sendable, Equatable, CustomStringConvertible {
    /// Reset (or lost) before any answer came: the client cannot tell
    /// whether the server handled the request.
    case reset
    /// The answer's head came, and its body ended before its length.
    case answerCutShort

    public var description: String {
        switch self {
        case .reset: "the connection was reset before the answer came"
        case .answerCutShort: "the answer ended early: the connection closed before its whole body came"
        }
    }
}
