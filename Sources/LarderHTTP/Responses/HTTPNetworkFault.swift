/// A fault of the network acted out on the real socket for one answer
/// (`--allow-faults`): the application decides (the fault middleware), the
/// connection acts, so no route knows about it.
public enum HTTPNetworkFault: Sendable, Equatable {
    /// Reset the connection (TCP RST: `SO_LINGER` 0, then close) instead of
    /// sending the answer. `handled`: whether the request was handled first
    /// (`drop: after`: a write is stored, and its answer never comes) or not
    /// at all (`drop: before`).
    case reset(handled: Bool)
    /// Send the head as it is (its full `Content-Length`) and the first
    /// `bytes` bytes of the body, then close: a body that ends early.
    case truncate(bytes: Int64)
    /// Send the body at most `bytesPerSecond` (a slow link).
    case pace(bytesPerSecond: Int)
}
