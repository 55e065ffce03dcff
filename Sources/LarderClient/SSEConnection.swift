import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `GET /events` request, read as it arrives.
///
/// `URLSession.bytes(for:)` does not exist in Linux's FoundationNetworking,
/// so a data delegate feeds each received chunk to an `SSEParser` and hands
/// every change event on at once. `run()` returns when the connection ends;
/// nothing waits on a thread meanwhile.
///
/// `@unchecked Sendable`: the mutable parsing state is only touched on the
/// session's serial delegate queue; `outcome` and the task are guarded by `lock`.
final class SSEConnection: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// How a connection ended.
    enum Outcome: Sendable {
        /// The server answered 200 and later closed the stream (or it broke).
        case dropped
        /// The server could not be reached (nothing was answered).
        case unreachable(LarderError)
        /// The server answered with an error: reconnecting will not help.
        case refused(LarderError)
        /// The consuming task was cancelled.
        case cancelled
    }

    private let request: URLRequest
    private let onOpen: @Sendable () -> Void
    private let onEvent: @Sendable (ChangeEvent) -> Void
    private let queue: OperationQueue
    // Delegate-queue state.
    private var parser = SSEParser()
    private var status: Int?
    private var errorBody = Data()
    // Guarded by `lock`.
    private let lock = NSLock()
    private var lastID: String?
    private var continuation: CheckedContinuation<Outcome, Never>?
    private var task: URLSessionDataTask?
    private var cancelled = false

    /// `onOpen` runs when the server answers 200 (it subscribes before it
    /// answers), `onEvent` for each change; both on the delegate queue.
    init(request: URLRequest, lastEventID: String?, onOpen: @escaping @Sendable () -> Void,
         onEvent: @escaping @Sendable (ChangeEvent) -> Void) {
        self.request = request
        self.onOpen = onOpen
        self.onEvent = onEvent
        self.lastID = lastEventID
        queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        super.init()
    }

    /// The id of the last event delivered (or the one connected with).
    var lastEventID: String? { lock.withLock { lastID } }

    /// Connects and reads until the stream ends or the calling task is cancelled.
    func run(configuration: URLSessionConfiguration) async -> Outcome {
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
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
        status = (response as? HTTPURLResponse)?.statusCode
        if status == 200 { onOpen() }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard status == 200 else {
            errorBody.append(data)
            return
        }
        for message in parser.feed(data) {
            // `dropped` (the server gave up on a slow reader) and unknown
            // kinds are not changes; the reconnect resumes from the last id.
            guard let kind = ChangeEvent.Kind(rawValue: message.event),
                  let change = try? ModelJSON.decode(ChangeData.self, from: Data(message.data.utf8)) else { continue }
            let id = message.id ?? ""
            lock.withLock { lastID = id }
            onEvent(ChangeEvent(id: id, kind: kind, data: change))
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let url = request.url?.absoluteString ?? ""
        let outcome: Outcome
        if lock.withLock({ cancelled }) {
            outcome = .cancelled
        } else if let status, status != 200 {
            outcome = .refused(ErrorMapping.error(status: status, body: errorBody, key: ""))
        } else if status == nil, let error {
            outcome = HTTPTransport.transportError(error, url: url) is CancellationError
                ? .cancelled : .unreachable(.unreachable(url: url, reason: error.localizedDescription))
        } else {
            outcome = .dropped
        }
        let continuation = lock.withLock { () -> CheckedContinuation<Outcome, Never>? in
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(returning: outcome)
    }
}
