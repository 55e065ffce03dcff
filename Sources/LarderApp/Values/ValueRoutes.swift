import LarderModel
import Dispatch
import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSharing
import LarderSupport
import LarderStoreVocabulary

/// `/store/<key>`: one value. GET/HEAD (with preconditions, Range and
/// `?wait`), PUT (with `?ttl`), DELETE, POST (JSON append), PATCH (JSON
/// merge patch). Every write's preconditions are checked by the store
/// atomically with the write.
struct ValueRoutes: Sendable {
    let store: any ValueStore
    let hub: ChangeHub
    let logger: Logger
    let representation: ValueRepresentation

    static let methods = "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS"
    /// `?wait` is capped at five minutes.
    static let maxWait = 300

    init(store: any ValueStore, hub: ChangeHub, logger: Logger) {
        self.store = store
        self.hub = hub
        self.logger = logger
        self.representation = ValueRepresentation(store: store, logger: logger)
    }

    func handle(_ key: StoreKey, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        switch head.method {
        case .get, .head:
            if head.query != nil, let wait = try QueryParameters(head.query).optionalInteger("wait", range: 0...Int.max) {
                return watch(key, request, seconds: min(wait, Self.maxWait))
            }
            let opened = store.open(key)
            // A value opened now (the cached GET) is answered from here: no
            // `StoreAnswer` is built, which would copy the head and the
            // representation (measured: ~300 instructions a GET).
            if case .now(let result) = opened { return .respond(try representation.response(opened: result, head)) }
            return try .after(opened, ValueRepresentation.Answer(representation: representation, head: head), request.responder)
        case .put:
            return try put(key, request)
        case .delete:
            let logger = self.logger
            return try .after(store.delete(key, condition: Preconditions.writeCondition(head)), request.responder) {
                deleted throws(HTTPError) -> HTTPResponse in
                let existed = try ErrorMapping.run(logger) { try deleted.get() }
                guard existed else {
                    // If-Match on an absent key is 412, as for any write.
                    if let p = Preconditions.of(head), p.evaluate(current: nil, isReadMethod: false) == .failed { throw Preconditions.failed }
                    throw StoreError.notFound.httpError
                }
                return HTTPResponse(status: .noContent)
            }
        case .post:
            return try append(key, request)
        case .patch:
            return try patch(key, request)
        case .options:
            return .respond(.allow(Self.methods))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed, "\(head.method) is not allowed here",
                            headers: [("Allow", Self.methods)])
        }
    }

    // MARK: - Writes

    private func put(_ key: StoreKey, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        let encoding = try Self.bodyEncoding(head)
        let expires = try Self.expiry(head, clock: store.clock)
        let condition = Preconditions.writeCondition(head)
        let look = try PreconditionGate.look(key, condition, in: store, request: request, logger: logger)
        let upload = try ErrorMapping.run(logger) {
            let upload = try store.beginUpload(key: key, contentType: head.headers["Content-Type"] ?? "application/octet-stream",
                                               encoding: encoding, expiresNanos: expires, condition: condition)
            // A large body of known size is deflated in segments, on every core.
            if let length = head.contentLength {
                do { try upload.expect(bytes: length) } catch { upload.abort(); throw error }
            }
            return upload
        }
        let sink = UploadSink(upload: upload, responder: request.responder, logger: logger) { outcome in
            HTTPResponse(status: outcome.created ? .created : .noContent, headers: Self.writeHeaders(outcome.metadata))
        }
        return .receiveBody(PreconditionGate.wrap(sink, look: look, condition: condition, request: request, logger: logger))
    }

    static func writeHeaders(_ meta: ValueMetadata) -> [(String, String)] {
        var headers = [("ETag", meta.etag)]
        if let expires = meta.expiresNanos {
            headers.append(("Larder-Expires", ValueRepresentation.httpDate(nanos: expires)))
        }
        return headers
    }

    static func bodyEncoding(_ head: HTTPRequestHead) throws(HTTPError) -> ValueUpload.Encoding {
        switch head.headers["Content-Encoding"]?.trimmingSpaces.lowercased() {
        case nil, "", "identity": return .identity
        case "gzip", "x-gzip": return .gzip
        case let other?:
            throw HTTPError(.unsupportedMediaType, .unsupportedEncoding,
                            "Content-Encoding '\(other)' is not supported; send the value as is or as gzip")
        }
    }

    /// `?ttl=SECONDS` as an absolute time in nanoseconds, by the
    /// namespace's clock (`clock`: its store's).
    static func expiry(_ head: HTTPRequestHead, clock: StoreClock) throws(HTTPError) -> Int64? {
        let query = try QueryParameters(head.query)
        guard let ttl = try query.optionalInteger("ttl", range: 1...Int(ExpiryLimit.maximumTTLSeconds)) else { return nil }
        return clock.nowNanos() + Int64(ttl) * 1_000_000_000
    }

    // MARK: - JSON updates

    private func append(_ key: StoreKey, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        let unique = try QueryParameters(head.query).flag("unique")
        let condition = Preconditions.writeCondition(head)
        let look = try PreconditionGate.look(key, condition, in: store, request: request, logger: logger)
        let store = self.store, logger = self.logger
        let sink = BufferedBodySink(limit: JSONUpdate.maxBodyBytes, responder: request.responder) { bytes in
            JSONUpdate.append(bytes, unique: unique, to: key, in: store, condition: condition)
        } answer: { appended throws(HTTPError) in
            let (outcome, count) = try ErrorMapping.run(logger) { try appended.get() }
            return .json(.ok, AppendCount(count: count), headers: Self.writeHeaders(outcome.metadata))
        }
        return .receiveBody(PreconditionGate.wrap(sink, look: look, condition: condition, request: request, logger: logger))
    }

    private func patch(_ key: StoreKey, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        let type = head.headers["Content-Type"]?.split(separator: ";").first?.trimmingSpaces.lowercased()
        guard type == "application/merge-patch+json" || type == "application/json" else {
            throw HTTPError(.unsupportedMediaType, .unsupportedMediaType,
                            "PATCH takes a JSON merge patch: Content-Type application/merge-patch+json or application/json")
        }
        let condition = Preconditions.writeCondition(head)
        let look = try PreconditionGate.look(key, condition, in: store, request: request, logger: logger)
        let store = self.store, logger = self.logger
        let sink = BufferedBodySink(limit: JSONUpdate.maxBodyBytes, responder: request.responder) { bytes in
            JSONUpdate.mergePatch(bytes, into: key, in: store, condition: condition)
        } answer: { patched throws(HTTPError) in
            let (outcome, document) = try ErrorMapping.run(logger) { try patched.get() }
            return .json(.ok, bytes: document, headers: Self.writeHeaders(outcome.metadata))
        }
        return .receiveBody(PreconditionGate.wrap(sink, look: look, condition: condition, request: request, logger: logger))
    }

    // MARK: - Watch

    /// `GET ?wait=`: answered now when there is something new, else when
    /// the key changes or at the deadline (`ValueWatch`).
    private func watch(_ key: StoreKey, _ request: RouteRequest, seconds: Int) -> RouteAnswer {
        ValueWatch.start(key, request, representation: representation, hub: hub, until: .now() + .seconds(seconds))
        return .later
    }
}
