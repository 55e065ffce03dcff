import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP answer, read whole: the status, the headers (names lowercased)
/// and the body.
struct HTTPAnswer: Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data

    init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    init(_ response: HTTPURLResponse, body: Data) {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            headers[String(describing: name).lowercased()] = String(describing: value)
        }
        self.init(status: response.statusCode, headers: headers, body: body)
    }

    subscript(header name: String) -> String? { headers[name.lowercased()] }
}

/// Builds `URLRequest`s for one server and sends them with a `URLSession`.
///
/// Why not `URLSession.data(for:)`: the completion-handler task gives us the
/// `URLSessionTask` to cancel when the calling Swift task is cancelled
/// (a watch's five-minute long poll must end at once), on every Foundation.
struct HTTPTransport: Sendable {
    let baseURL: URL
    let token: String?
    let timeout: TimeInterval
    let session: URLSession

    /// The base URL as text without a trailing `/`, so paths join with one.
    private var base: String {
        var text = baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// `path` (already percent-encoded) with `query` appended.
    func url(_ path: String, query: [(String, String)] = []) -> URL {
        var text = base + path
        if !query.isEmpty {
            // Values are keys or numbers; the key encoder escapes `&`, `=`, `+` and `%`.
            text += "?" + query.map { "\($0.0)=\(KeyPercentEncoding.percentEncode($0.1))" }.joined(separator: "&")
        }
        // Every piece is percent-encoded ASCII, so this always parses.
        return URL(string: text)!
    }

    /// A request with the headers every call carries.
    func request(_ method: String, _ url: URL, timeout: TimeInterval? = nil) -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout ?? self.timeout)
        request.httpMethod = method
        // libcurl would otherwise negotiate gzip and hand back the decompressed
        // bytes with the gzip representation's ETag and Content-Length.
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    /// Sends `request` and reads the whole answer.
    /// - Throws: `LarderError.connectionLost` when the connection broke
    ///   after the request went out (reset, or an answer cut short),
    ///   `LarderError.unreachable` for another transport failure,
    ///   `CancellationError` when the calling task is cancelled.
    func send(_ request: URLRequest) async throws -> HTTPAnswer {
        let handle = TaskHandle()
        let url = request.url?.absoluteString ?? base
        let method = request.httpMethod ?? "GET"
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPAnswer, any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: Self.transportError(error, url: url, method: method))
                    } else if let http = response as? HTTPURLResponse {
                        continuation.resume(returning: HTTPAnswer(http, body: data ?? Data()))
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
