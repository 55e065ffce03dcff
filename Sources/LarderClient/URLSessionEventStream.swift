import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `GET /events` request over `URLSession`, read as it arrives.
///
/// `URLSession.bytes(for:)` does not exist in Linux's FoundationNetworking,
/// so a data delegate feeds each received chunk to the `EventStream`.
/// `run()` returns when the connection ends; nothing waits on a thread
/// meanwhile.
///
/// `@unchecked Sendable`: the stream is fed only on the session's serial
/// delegate queue; the continuation, task and `cancelled` are guarded by `lock`.
final class URLSessionEventStream: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let request: URLRequest
    private let stream: EventStream
    private let queue: OperationQueue
    // Guarded by `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<EventStream.Outcome, Never>?
    private var task: URLSessionDataTask?
    private var cancelled = false

    init(request: URLRequest, stream: EventStream) {
        self.request = request
        self.stream = stream
        queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        super.init()
    }

    /// Connects and reads until the stream ends or the calling task is cancelled.
    func run(configuration: URLSessionConfiguration) async -> EventStream.Outcome {
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<EventStream.Outcome, Never>) in
                let task = session.dataTask(with: request)
                let cancelNow = lock.withLock { () -> Bool in
                    self.continuation = continuation
                    self.task = task
                    return cancelled
                }
                task.resume()
                if cancelNow { task.cancel() }
            }
        } onCancel: {
            let task = lock.withLock { () -> URLSessionDataTask? in
                cancelled = true
                return self.task
            }
            task?.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        stream.opened(status: (response as? HTTPURLResponse)?.statusCode ?? 0)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        stream.received(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let url = request.url?.absoluteString ?? ""
        var failure: LarderError?
        var cancelled = lock.withLock { self.cancelled }
        if let error {
            if URLSessionConnector.transportError(error, url: url) is CancellationError {
                cancelled = true
            } else {
                failure = .unreachable(url: url, reason: error.localizedDescription)
            }
        }
        let outcome = stream.outcome(cancelled: cancelled, failure: failure)
        let continuation = lock.withLock { () -> CheckedContinuation<EventStream.Outcome, Never>? in
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(returning: outcome)
    }
}
