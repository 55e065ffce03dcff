import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests with a `URLSession` (FoundationNetworking's libcurl on
/// Linux): the transport for `https` and for callers that ask for it.
///
/// Why not `URLSession.data(for:)`: the completion-handler task gives us the
/// `URLSessionTask` to cancel when the calling Swift task is cancelled
/// (a watch's five-minute long poll must end at once), on every Foundation.
struct URLSessionConnector: HTTPConnector {
    /// `scheme://host:port`, which a request's target follows.
    let origin: String
    let session: URLSession
    /// The configuration each change-feed connection's own session is made from.
    let streamConfiguration: URLSessionConfiguration

    func urlRequest(_ request: ClientRequest) -> URLRequest {
        // Every piece of the target is percent-encoded ASCII, so this always parses.
        var urlRequest = URLRequest(url: URL(string: origin + request.target)!, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        // libcurl would otherwise negotiate gzip and hand back the decompressed
        // bytes with the gzip representation's ETag and Content-Length.
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.httpBody
        return urlRequest
    }

    func send(_ request: ClientRequest) async throws -> HTTPAnswer {
        let urlRequest = urlRequest(request)
        let handle = TaskHandle()
        let url = origin + request.target
        let method = request.method
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPAnswer, any Error>) in
                let task = session.dataTask(with: urlRequest) { data, response, error in
                    if let error {
                        continuation.resume(throwing: Self.transportError(error, url: url, method: method))
                    } else if let http = response as? HTTPURLResponse {
                        continuation.resume(returning: Self.answer(http, body: data ?? Data()))
                    } else {
                        continuation.resume(throwing: LarderError.unreachable(url: url, reason: "the answer is not HTTP"))
                    }
                }
                handle.start(task)
            }
        } onCancel: {
            handle.cancel()
        }
    }

    func follow(_ request: ClientRequest, into stream: EventStream) async -> EventStream.Outcome {
        await URLSessionEventStream(request: urlRequest(request), stream: stream).run(configuration: streamConfiguration)
    }

    func close() {
        session.finishTasksAndInvalidate()
    }

    static func answer(_ response: HTTPURLResponse, body: Data) -> HTTPAnswer {
        let headers = response.allHeaderFields.map { (name: String(describing: $0.key), value: String(describing: $0.value)) }
        return HTTPAnswer(status: response.statusCode, headers: headers, body: body)
    }

    /// A failed transfer as the error a caller handles: cancelled tasks end
    /// with `CancellationError`, a connection that broke after the request
    /// went out is `connectionLost`, everything else is `unreachable`.
    static func transportError(_ error: any Error, url: String, method: String = "GET") -> any Error {
        guard let urlError = error as? URLError else { return LarderError.unreachable(url: url, reason: error.localizedDescription) }
        if urlError.code == .cancelled { return CancellationError() }
        if let loss = connectionLoss(urlError) { return LarderError.connectionLost(url: url, method: method, loss: loss) }
        return LarderError.unreachable(url: url, reason: error.localizedDescription)
    }

    /// How the connection broke, if that is what `error` says. libcurl
    /// (FoundationNetworking) reports a body short of its Content-Length as
    /// "transfer closed with N bytes remaining to read" (code -1), a reset
    /// as `networkConnectionLost`; Darwin reports both as the latter.
    static func connectionLoss(_ error: URLError) -> ConnectionLoss? {
        let text = (error.userInfo[NSLocalizedDescriptionKey] as? String ?? "").lowercased()
        if text.contains("transfer closed with") || text.contains("remaining to read") { return .answerCutShort }
        switch error.code {
        case .networkConnectionLost: return .reset
        default: return nil
        }
    }
}

/// The `URLSessionTask` of one request, shared with the cancellation handler
/// that may run before the task exists (then the task is cancelled on start).
final class TaskHandle: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var task: URLSessionTask?
    private var cancelled = false

    func start(_ task: URLSessionTask) {
        let cancelNow = lock.withLock { () -> Bool in
            self.task = task
            return cancelled
        }
        task.resume()
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock { () -> URLSessionTask? in
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
