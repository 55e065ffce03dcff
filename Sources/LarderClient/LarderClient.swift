import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LarderWire

/// A `Larder` over the HTTP API of a Larder server (docs/http-api.md): the
/// same calls as `EmbeddedLarder`, made from any process.
///
/// ```swift
/// let larder = LarderClient(baseURL: URL(string: "http://127.0.0.1:8080")!, token: "s3cret")
/// try await larder.save(Settings(theme: "dark"), at: "settings")
/// let settings: Settings = try await larder.fetch(at: "settings")
/// ```
///
/// Every call is async and waits without holding a thread; transport
/// failures throw `LarderError.unreachable`, error answers the `LarderError`
/// case the embedded store throws for the same failure. Requests go over
/// Larder's own socket client (`Transport.larderWire`) or `URLSession`.
///
/// `Sendable`: every stored property is immutable, and both transports are
/// safe to use from any thread.
public final class LarderClient: Larder, Sendable {
    /// How a client's requests reach the server.
    public enum Transport: Sendable {
        /// Larder's own HTTP/1.1 client on non-blocking sockets and Dispatch
        /// (`LarderWire`): keep-alive connections, about a fifth of
        /// URLSession's time per request. Plain `http` only: an `https` base
        /// URL uses `urlSession`.
        case larderWire
        /// `URLSession` (libcurl on Linux), configured from `configuration`.
        case urlSession
    }

    /// The server's address, e.g. `http://127.0.0.1:8080`.
    public let baseURL: URL
    /// How `Codable` values become bytes and back.
    public let coder: LarderCoder
    /// The transport the requests go over (`larderWire` becomes
    /// `urlSession` for an `https` URL).
    public let transportKind: Transport
    /// Ordinary requests.
    let transport: HTTPTransport
    /// Watches' long polls (and the change feed's streams): over URLSession,
    /// on their own session so that they never take the connections
    /// ordinary requests wait for; over LarderWire the pool has no cap, so
    /// they share it.
    let longPoll: HTTPTransport

    /// How long a watch's request asks the server to wait (the server's cap).
    static let watchSeconds = 300

    /// A client of the server at `baseURL`.
    /// - Parameters:
    ///   - baseURL: the server's URL, e.g. `http://127.0.0.1:8080` (what
    ///     `larder` prints on stdout); paths go under it.
    ///   - token: sent as `Authorization: Bearer <token>` when set (`--token`).
    ///   - timeout: how long a request may go without an answer, in seconds
    ///     (watches and the change feed wait longer by design).
    ///   - coder: how `Codable` values become bytes and back.
    ///   - transport: Larder's own socket client (the default) or `URLSession`.
    ///   - configuration: for `urlSession`, the `URLSession` configuration to
    ///     start from; its cache, cookies and credential storage are turned
    ///     off (conditional requests must reach the server).
    public init(baseURL: URL, token: String? = nil, timeout: TimeInterval = 30, coder: LarderCoder = .default,
                transport: Transport = .larderWire, configuration: URLSessionConfiguration = .ephemeral) {
        self.baseURL = baseURL
        self.coder = coder
        var origin = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        origin.percentEncodedPath = ""
        origin.query = nil
        origin.fragment = nil
        let originText = origin.string ?? baseURL.absoluteString
        let pollTimeout = TimeInterval(Self.watchSeconds + 60)
        if transport == .larderWire, baseURL.scheme?.lowercased() == "http", let host = baseURL.host, !host.isEmpty {
            let connector = WireConnector(origin: originText, pool: WireConnectionPool(host: host, port: baseURL.port ?? 80))
            transportKind = .larderWire
            self.transport = HTTPTransport(baseURL: baseURL, token: token, timeout: timeout, connector: connector)
            longPoll = HTTPTransport(baseURL: baseURL, token: token, timeout: pollTimeout, connector: connector)
        } else {
            let config = configuration.copy() as! URLSessionConfiguration
            config.urlCache = nil
            config.requestCachePolicy = .reloadIgnoringLocalCacheData
            config.httpCookieStorage = nil
            config.urlCredentialStorage = nil
            config.timeoutIntervalForRequest = timeout
            let pollConfig = config.copy() as! URLSessionConfiguration
            pollConfig.timeoutIntervalForRequest = pollTimeout
            transportKind = .urlSession
            self.transport = HTTPTransport(baseURL: baseURL, token: token, timeout: timeout, connector: URLSessionConnector(
                origin: originText, session: URLSession(configuration: config), streamConfiguration: config))
            longPoll = HTTPTransport(baseURL: baseURL, token: token, timeout: pollTimeout, connector: URLSessionConnector(
                origin: originText, session: URLSession(configuration: pollConfig), streamConfiguration: config))
        }
    }

    deinit {
        transport.connector.close()
        longPoll.connector.close()
    }

    // MARK: - Paths

    /// `/store/<key>`, the key percent-encoded as the server's links are.
    func storePath(_ key: String) -> String {
        // libcurl removes `.` and `..` segments before sending (RFC 3986), so
        // `a/../b` would reach the server as `b` and write there. Escaped dots
        // pass through as they are, and the server refuses them as a key rule.
        let segments = key.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment == "." || segment == ".." ? String(repeating: "%2E", count: segment.count)
                : KeyPercentEncoding.percentEncode(String(segment))
        }
        return "/store/" + segments.joined(separator: "/")
    }

    /// `/store/<prefix>` for a prefix that is `""` or ends in `/`.
    func prefixPath(_ prefix: String) throws -> String {
        guard prefix.isEmpty || prefix.hasSuffix("/") else {
            throw LarderError.invalidKey(prefix, reason: "a prefix is empty or ends in '/'")
        }
        return storePath(prefix)
    }

    /// `ttl` as the API's whole seconds, rounded up, at least 1 and at most
    /// `maximumTTLSeconds`: the server refuses a longer `?ttl=` with 400,
    /// while the embedded store caps it, and the two must accept the same calls.
    static func ttlSeconds(_ ttl: Duration) -> Int {
        let (seconds, attoseconds) = ttl.components
        // Capped before rounding up, so `Int64.max` seconds cannot overflow.
        let whole = seconds >= maximumTTLSeconds ? maximumTTLSeconds : seconds + (attoseconds > 0 ? 1 : 0)
        return Int(max(1, whole))
    }

    /// Adds the `If-Match` / `If-None-Match: *` header of `condition`.
    static func apply(_ condition: SaveCondition, to request: inout ClientRequest) {
        switch condition {
        case .none: break
        case .ifMatch(let etag): request.setValue(etag, forHTTPHeaderField: "If-Match")
        case .ifAbsent: request.setValue("*", forHTTPHeaderField: "If-None-Match")
        }
    }

    /// The answer's `ETag`, which every write answer carries.
    static func etag(_ answer: HTTPAnswer, key: String) throws -> String {
        guard let etag = answer[header: "ETag"] else {
            throw LarderError.server(status: answer.status, error: ErrorBody(ErrorCode("missing_etag"),
                                                                            "the answer for '\(key)' has no ETag"))
        }
        return etag
    }

    /// A success body decoded as the model type `T`.
    static func decode<T: Decodable>(_ type: T.Type, _ answer: HTTPAnswer) throws -> T {
        do {
            return try ModelJSON.decode(type, from: answer.body)
        } catch {
            let text = String(decoding: answer.body.prefix(256), as: UTF8.self)
            throw LarderError.server(status: answer.status, error: ErrorBody(ErrorCode("invalid_answer"),
                                                                            "not a \(T.self): \(text)"))
        }
    }

    // MARK: - Reading

    /// `GET /store/<key>`: the value's bytes (always the identity
    /// representation) and its info from the headers.
    public func fetch(_ key: String) async throws -> StoredData {
        let answer = try await transport.send(transport.request("GET", transport.url(storePath(key))))
        guard answer.status == 200 else { throw ErrorMapping.error(status: answer.status, body: answer.body, key: key) }
        return StoredData(data: answer.body, info: try HeaderValueInfo.info(key: key, answer: answer, size: answer.body.count))
    }

    /// `HEAD /store/<key>`: the value's info without its bytes.
    public func info(_ key: String) async throws -> ValueInfo {
        let answer = try await transport.send(transport.request("HEAD", transport.url(storePath(key))))
        guard answer.status == 200 else {
            // A HEAD answer has no body, so the status is the only detail
            // there is: 404 is `not_found`, and the only 400 a HEAD of
            // /store/<key> without a query can get is a key that breaks a
            // key rule, which the embedded store throws as `invalidKey`.
            let body: Data
            switch answer.status {
            case 404: body = Data(#"{"error":"not_found","message":""}"#.utf8)
            case 400 where answer.body.isEmpty:
                body = Data(#"{"error":"invalid_key","message":"the key breaks a key rule of docs/http-api.md"}"#.utf8)
            default: body = answer.body
            }
            throw ErrorMapping.error(status: answer.status, body: body, key: key)
        }
        return try HeaderValueInfo.info(key: key, answer: answer, size: nil)
    }

    /// `GET /store/<prefix>?limit=&after=&delimiter=/`: one page of keys;
    /// `limit` is clamped to 1...10000.
    public func listPage(prefix: String, after: String?, limit: Int, delimiter: Bool) async throws -> ListingPage {
        // Clamped here because the server refuses a limit below 1 with 400
        // while the embedded store clamps it: both must accept the same calls.
        var query = [("limit", String(min(max(limit, 1), 10_000)))]
        if let after { query.append(("after", after)) }
        if delimiter { query.append(("delimiter", "/")) }
        let answer = try await transport.send(transport.request("GET", transport.url(try prefixPath(prefix), query: query)))
        guard answer.status == 200 else { throw ErrorMapping.error(status: answer.status, body: answer.body, key: prefix) }
        return try Self.decode(ListingPage.self, answer)
    }

    // MARK: - Writing

    /// `PUT /store/<key>[?ttl=]` with the condition's `If-Match` or
    /// `If-None-Match: *`; `created` is whether the answer was `201`.
    public func save(_ data: Data, at key: String, contentType: String, condition: SaveCondition, ttl: Duration?) async throws -> WriteResult {
        var request = transport.request("PUT", transport.url(storePath(key), query: ttl.map { [("ttl", String(Self.ttlSeconds($0)))] } ?? []))
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        Self.apply(condition, to: &request)
        request.httpBody = data
        let answer = try await transport.send(request)
        guard (200...299).contains(answer.status) else { throw ErrorMapping.error(status: answer.status, body: answer.body, key: key) }
        return WriteResult(key: key, etag: try Self.etag(answer, key: key), created: answer.status == 201)
    }

    /// `DELETE /store/<key>`: true for `204`, false for `404`.
    public func delete(_ key: String, condition: SaveCondition) async throws -> Bool {
        var request = transport.request("DELETE", transport.url(storePath(key)))
        Self.apply(condition, to: &request)
        let answer = try await transport.send(request)
        if (200...299).contains(answer.status) { return true }
        let error = ErrorMapping.error(status: answer.status, body: answer.body, key: key)
        if case .notFound = error { return false }
        throw error
    }

    /// `DELETE /store/<prefix>`: how many keys went.
    public func removeAll(prefix: String) async throws -> Int {
        let answer = try await transport.send(transport.request("DELETE", transport.url(try prefixPath(prefix))))
        guard answer.status == 200 else { throw ErrorMapping.error(status: answer.status, body: answer.body, key: prefix) }
        return try Self.decode(DeletedCount.self, answer).deleted
    }

    /// `POST /store/<key>[?unique=1]` with a JSON body: atomic append.
    public func append(json: Data, to key: String, unique: Bool, condition: SaveCondition) async throws -> AppendResult {
        var request = transport.request("POST", transport.url(storePath(key), query: unique ? [("unique", "1")] : []))
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        Self.apply(condition, to: &request)
        request.httpBody = json
        let answer = try await transport.send(request)
        guard answer.status == 200 else {
            throw ErrorMapping.error(status: answer.status, body: answer.body, key: key, appending: true)
        }
        return AppendResult(count: try Self.decode(AppendCount.self, answer).count, etag: try Self.etag(answer, key: key))
    }

    /// `POST /store/<prefix>[?ttl=]`: the value under a generated key.
    public func create(_ data: Data, under prefix: String, contentType: String, ttl: Duration?) async throws -> WriteResult {
        let query = ttl.map { [("ttl", String(Self.ttlSeconds($0)))] } ?? []
        var request = transport.request("POST", transport.url(try prefixPath(prefix), query: query))
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = data
        let answer = try await transport.send(request)
        guard answer.status == 201 else { throw ErrorMapping.error(status: answer.status, body: answer.body, key: prefix) }
        let created = try Self.decode(CreatedKey.self, answer)
        return WriteResult(key: created.key, etag: try Self.etag(answer, key: created.key), created: true)
    }
}
