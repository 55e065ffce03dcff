import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension LarderClient {
    /// Every change under `prefix` from now on (with `after`, from just after
    /// that event id), read from the Server-Sent Events of
    /// `GET /events?prefix=` as they arrive.
    ///
    /// Returns once the server has answered the first connection, that is,
    /// once it has subscribed it: a write made after this returns is in the
    /// sequence. Throws when that first connection is refused (a 4xx other
    /// than 408, e.g. 401) or the server cannot be reached.
    ///
    /// A dropped connection reconnects with `Last-Event-ID` set to the last
    /// event seen, after a short backoff, so nothing the server still
    /// remembers is missed; a 5xx or 408 answer is retried the same way. The
    /// sequence ends when the consuming task is cancelled or stops iterating.
    public func changes(prefix: String, after eventID: String?) async throws -> AsyncThrowingStream<ChangeEvent, any Error> {
        let opening = OpeningSignal()
        let stream = AsyncThrowingStream<ChangeEvent, any Error> { continuation in
            let task = Task {
                let error = await self.followChanges(prefix: prefix, after: eventID, opened: { opening.open() }) {
                    continuation.yield($0)
                }
                opening.fail(error ?? CancellationError())
                continuation.finish(throwing: error)
            }
            continuation.onTermination = { _ in task.cancel() }
        }
        // Returning without the stream (a failure, a cancelled caller) drops
        // it, and its termination cancels the connecting task.
        try await opening.wait()
        return stream
    }

    /// The reconnecting loop of `changes`; the error that ended it, or nil when cancelled.
    private func followChanges(prefix: String, after eventID: String?, opened: @escaping @Sendable () -> Void,
                               yield: @escaping @Sendable (ChangeEvent) -> Void) async -> (any Error)? {
        var lastID = eventID
        var connectedOnce = false
        var backoff = Self.minimumBackoff
        while !Task.isCancelled {
            var request = transport.request("GET", transport.url("/events", query: [("prefix", prefix)]),
                                            timeout: Self.streamIdleTimeout)
            request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            if let lastID { request.setValue(lastID, forHTTPHeaderField: "Last-Event-ID") }
            let stream = EventStream(lastEventID: lastID, onOpen: opened, onEvent: yield)
            let outcome = await longPoll.connector.follow(request, into: stream)
            lastID = stream.lastEventID
            switch outcome {
            case .cancelled:
                return nil
            case .refused(let error) where Self.isRetryable(error):
                // A 5xx or 408 (a restarting server, a proxy, an injected
                // fault) may pass: retried with the backoff, from the last id.
                backoff = min(backoff * 2, Self.maximumBackoff)
            case .refused(let error):
                return error
            case .unreachable(let error) where !connectedOnce:
                return error
            case .dropped:
                connectedOnce = true
                backoff = Self.minimumBackoff
            case .unreachable:
                backoff = min(backoff * 2, Self.maximumBackoff)
            }
            do {
                try await Task.sleep(for: backoff)
            } catch {
                return nil
            }
        }
        return nil
    }

    /// Whether an error answer to `GET /events` may pass: 5xx and 408.
    /// Any other 4xx (401, 400) will not change by asking again.
    static func isRetryable(_ error: LarderError) -> Bool {
        guard let status = error.status else { return false }
        return status == 408 || (500...599).contains(status)
    }

    /// The first reconnect's wait; it doubles while the server stays away.
    static let minimumBackoff = Duration.milliseconds(100)
    static let maximumBackoff = Duration.seconds(5)
    /// How long the stream may stay silent before it counts as dropped: the
    /// server sends a keep-alive comment every 15 s by default.
    static let streamIdleTimeout: TimeInterval = 120
}
