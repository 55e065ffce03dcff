import Foundation

/// Builds a `LarderClient`'s requests for one server (the base URL's path,
/// the token, the timeout) and hands them to its connector.
struct HTTPTransport: Sendable {
    let token: String?
    let timeout: TimeInterval
    let connector: any HTTPConnector
    /// The base URL's percent-encoded path without a trailing `/`, so
    /// paths join with one.
    let basePath: String

    init(baseURL: URL, token: String?, timeout: TimeInterval, connector: any HTTPConnector) {
        self.token = token
        self.timeout = timeout
        self.connector = connector
        var path = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
    }

    /// The target of `path` (already percent-encoded) with `query` appended.
    func url(_ path: String, query: [(String, String)] = []) -> String {
        var text = basePath + path
        if !query.isEmpty {
            // Values are keys or numbers; the key encoder escapes `&`, `=`, `+` and `%`.
            text += "?" + query.map { "\($0.0)=\(KeyPercentEncoding.percentEncode($0.1))" }.joined(separator: "&")
        }
        return text
    }

    /// A request with the headers every call carries.
    func request(_ method: String, _ target: String, timeout: TimeInterval? = nil) -> ClientRequest {
        var request = ClientRequest(method: method, target: target, timeout: timeout ?? self.timeout)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return request
    }

    func send(_ request: ClientRequest) async throws -> HTTPAnswer {
        try await connector.send(request)
    }
}
