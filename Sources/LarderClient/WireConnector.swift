import Foundation
import LarderWire

/// Sends requests over Larder's own socket client (`LarderWire`): keep-alive
/// connections from a `WireConnectionPool`, read on Dispatch sources, so a
/// request costs two system calls and no thread waits. Plain `http` only.
struct WireConnector: HTTPConnector {
    /// `http://host:port`, for the URLs in errors.
    let origin: String
    let pool: WireConnectionPool

    func send(_ request: ClientRequest) async throws -> HTTPAnswer {
        let answer = CollectedResponse()
        let result = await pool.perform(wireRequest(request), into: answer, idleTimeout: request.timeout)
        switch result {
        case .success:
            // A completed exchange always has its head.
            guard let head = answer.head else { throw LarderError.unreachable(url: origin + request.target, reason: "no answer") }
            return HTTPAnswer(head: head, body: answer.body)
        case .failure(let failure):
            throw error(failure, request)
        }
    }

    func follow(_ request: ClientRequest, into stream: EventStream) async -> EventStream.Outcome {
        let result = await pool.perform(wireRequest(request), into: EventStreamSink(stream), idleTimeout: request.timeout, reuse: false)
        switch result {
        case .success:
            return stream.outcome(cancelled: false, failure: nil)
        case .failure(.cancelled):
            return stream.outcome(cancelled: true, failure: nil)
        case .failure(let failure):
            // Before any answer, every failure is `unreachable`, as over
            // URLSession (and as `changes()` documents for its first connection).
            return stream.outcome(cancelled: false, failure: .unreachable(url: origin + request.target, reason: "\(failure)"))
        }
    }

    func close() {
        pool.close()
    }

    private func wireRequest(_ request: ClientRequest) -> WireRequest {
        WireRequest(method: request.method, target: request.target, headers: request.headers, body: request.httpBody)
    }

    /// The error a caller handles for a failed exchange, as `URLSessionConnector` gives it.
    private func error(_ failure: WireFailure, _ request: ClientRequest) -> any Error {
        let url = origin + request.target
        switch failure {
        case .cancelled: return CancellationError()
        case .cannotConnect(let reason): return LarderError.unreachable(url: url, reason: reason)
        case .closedBeforeAnswer(requestSent: false):
            // The server closed before the request was all out: it cannot have acted on it.
            return LarderError.unreachable(url: url, reason: failure.description)
        case .closedBeforeAnswer(requestSent: true): return LarderError.connectionLost(url: url, method: request.method, loss: .reset)
        case .cutShort: return LarderError.connectionLost(url: url, method: request.method, loss: .answerCutShort)
        case .timedOut, .malformed: return LarderError.unreachable(url: url, reason: failure.description)
        }
    }
}

/// Feeds a `GET /events` answer to its `EventStream` as it arrives (on the
/// connection's queue).
private final class EventStreamSink: ResponseSink {
    let stream: EventStream

    init(_ stream: EventStream) { self.stream = stream }

    func responseHead(_ head: ResponseHead) { stream.opened(status: head.status) }

    func responseBody(_ bytes: UnsafeRawBufferPointer) { stream.received(bytes) }
}
