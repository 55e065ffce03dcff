import Foundation

/// What sends a `LarderClient`'s requests: Larder's own socket client
/// (`WireConnector`) or `URLSession` (`URLSessionConnector`).
protocol HTTPConnector: Sendable {
    /// Sends `request` and reads the whole answer.
    /// - Throws: `LarderError.connectionLost` when the connection broke
    ///   after the request went out (reset, or an answer cut short),
    ///   `LarderError.unreachable` for another transport failure,
    ///   `CancellationError` when the calling task is cancelled.
    func send(_ request: ClientRequest) async throws -> HTTPAnswer

    /// Sends `request` (a `GET /events`) and feeds the answer to `stream`
    /// as it arrives, until the connection ends or the calling task is
    /// cancelled.
    func follow(_ request: ClientRequest, into stream: EventStream) async -> EventStream.Outcome

    /// Closes the connections (the client is going away: nothing is in flight).
    func close()
}
