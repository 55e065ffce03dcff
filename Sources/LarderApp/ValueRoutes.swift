import LarderModel
import Dispatch
import LarderHTTP
import LarderJSON
import LarderStorage
import LarderValueFile
import LarderSupport

/// `/store/<key>`: one value. GET/HEAD (with preconditions, Range and
/// `?wait`), PUT (with `?ttl`), DELETE, POST (JSON append), PATCH (JSON
/// merge patch). Every write's preconditions are checked by the store
/// atomically with the write.
struct ValueRoutes: Sendable {
    let store: any ValueStore
    let hub: ChangeHub
    let logger: Logger
    let representation: ValueRepresentation
    /// Where calls that wait on the store run (off the connection's thread
    /// for a store that answers later).
    let work: StoreWork

    static let methods = "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS"
    /// JSON updates hold the value and the body in memory: both are bounded.
    static let maxJSONValue = 32 << 20
    static let maxJSONBody = 16 << 20
    /// `?wait` is capped at five minutes.
    static let maxWait = 300

    init(store: any ValueStore, hub: ChangeHub, logger: Logger) {
        self.store = store
        self.hub = hub
        self.logger = logger
        self.representation = ValueRepresentation(store: store, logger: logger)
        self.work = StoreWork(store: store)
    }

    func handle(_ key: StoreKey, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        switch head.method {
        case .get, .head:
            if head.query != nil, let wait = try QueryParameters(head.query).optionalInteger("wait", range: 0...Int.max) {
                return try watch(key, request, seconds: min(wait, Self.maxWait))
            }
            if store.answersLater {
                representation.respond(key, head, through: request.responder)
                return .later
            }
            return .respond(try representation.response(key, head))
        case .put:
            return try put(key, request)
        case .delete:
            let store = self.store, logger = self.logger
            return try work.answer(request.responder) { () throws(HTTPError) -> HTTPResponse in
                let existed = try ErrorMapping.run(logger) { try store.delete(key, condition: Preconditions.writeCondition(head)) }
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
        let expires = try Self.expiry(head)
        let condition = Preconditions.writeCondition(head)
        try checkEarly(key, condition)
        let upload = try ErrorMapping.run(logger) {
            let upload = try store.beginUpload(key: key, contentType: head.headers["Content-Type"] ?? "application/octet-stream",
                                               encoding: encoding, expiresNanos: expires, condition: condition)
            // A large body of known size is deflated in segments, on every core.
            if let length = head.contentLength { try upload.expect(bytes: length) }
            return upload
        }
        let sink = UploadSink(upload: upload, responder: request.responder, logger: logger) { outcome in
            HTTPResponse(status: outcome.created ? .created : .noContent, headers: Self.writeHeaders(outcome.metadata))
        }
        return .receiveBody(PreconditionGate.wrap(sink, store: store, key: key, condition: condition, request: request, logger: logger))
    }

    /// A precondition that already fails is answered before the body is
    /// read (with `Expect: 100-continue`, before it is sent). The store
    /// checks again when the write publishes.
    ///
    /// Not for a store that answers later: the early look would hold the
    /// connection's thread for a database round trip. There, with
    /// `Expect: 100-continue`, `PreconditionGate` asks the store
    /// asynchronously before `100 Continue`.
    private func checkEarly(_ key: StoreKey, _ condition: WriteCondition?) throws(HTTPError) {
        guard let condition, !store.answersLater else { return }
        try ErrorMapping.run(logger) {
            var current: ValueMetadata? = nil
            do {
                let value = try store.open(key)
                current = value.metadata
                value.close()
            } catch StoreError.notFound {}
            try condition(current)
        }
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

    /// `?ttl=SECONDS` as an absolute time in nanoseconds.
    static func expiry(_ head: HTTPRequestHead) throws(HTTPError) -> Int64? {
        let query = try QueryParameters(head.query)
        guard let ttl = try query.optionalInteger("ttl", range: 1...Int(ExpiryLimit.maximumTTLSeconds)) else { return nil }
        return Clock.nowNanos() + Int64(ttl) * 1_000_000_000
    }

    // MARK: - JSON updates

    private func append(_ key: StoreKey, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        let unique = try QueryParameters(head.query).flag("unique")
        let condition = Preconditions.writeCondition(head)
        try checkEarly(key, condition)
        let store = self.store, logger = self.logger
        let sink = BufferedBodySink(limit: Self.maxJSONBody, responder: request.responder, work: work) { bytes throws(HTTPError) in
            let body = try Self.parseBody(bytes)
            var count = 0
            let outcome = try ErrorMapping.run(logger) {
                try store.update(key, condition: condition, maxValueBytes: Self.maxJSONValue) { meta, stored in
                    let current = try stored.map(Self.parseStored)
                    let (result, n) = JSONValue.appending(body, to: current, unique: unique)
                    count = n
                    return UpdatedValue(bytes: result.serialized(), contentType: meta?.contentType ?? "application/json")
                }
            }
            return .json(.ok, AppendCount(count: count), headers: Self.writeHeaders(outcome.metadata))
        }
        return .receiveBody(PreconditionGate.wrap(sink, store: store, key: key, condition: condition, request: request, logger: logger))
    }

    private func patch(_ key: StoreKey, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        let type = head.headers["Content-Type"]?.split(separator: ";").first?.trimmingSpaces.lowercased()
        guard type == "application/merge-patch+json" || type == "application/json" else {
            throw HTTPError(.unsupportedMediaType, .unsupportedMediaType,
                            "PATCH takes a JSON merge patch: Content-Type application/merge-patch+json or application/json")
        }
        let condition = Preconditions.writeCondition(head)
        try checkEarly(key, condition)
        let store = self.store, logger = self.logger
        let sink = BufferedBodySink(limit: Self.maxJSONBody, responder: request.responder, work: work) { bytes throws(HTTPError) in
            let patch = try Self.parseBody(bytes)
            var document: [UInt8] = []
            let outcome = try ErrorMapping.run(logger) {
                try store.update(key, condition: condition, maxValueBytes: Self.maxJSONValue) { meta, stored in
                    guard let stored, let meta else { throw StoreError.notFound }
                    document = try Self.parseStored(stored).mergePatched(with: patch).serialized()
                    return UpdatedValue(bytes: document, contentType: meta.contentType)
                }
            }
            return .json(.ok, bytes: document, headers: Self.writeHeaders(outcome.metadata))
        }
        return .receiveBody(PreconditionGate.wrap(sink, store: store, key: key, condition: condition, request: request, logger: logger))
    }

    static func parseBody(_ bytes: [UInt8]) throws(HTTPError) -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw HTTPError(.badRequest, .invalidJSON, "the body is not JSON: \(error.message)")
        }
    }

    static func parseStored(_ bytes: [UInt8]) throws(HTTPError) -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw HTTPError(.conflict, .notJSON, "the stored value is not JSON (\(error.message)), so it cannot be updated as JSON")
        }
    }

    // MARK: - Watch

    private func watch(_ key: StoreKey, _ request: RouteRequest, seconds: Int) throws(HTTPError) -> RouteAnswer {
        let watch = KeyWatch(key: key, request: request, representation: representation, hub: hub)
        if store.answersLater {
            watch.start(parkingUntil: .now() + .seconds(seconds))
            return .later
        }
        guard let now = try watch.check(firstTime: true) else {
            watch.park(until: .now() + .seconds(seconds))
            return .later
        }
        return .respond(now)
    }
}

/// One `GET ?wait=` request: a GET whose "nothing new" answer (304, or 404
/// when waiting for a key to appear) is held back until the key changes or
/// the deadline passes. Waiting costs a watcher entry and a parked
/// connection, no thread.
final class KeyWatch: @unchecked Sendable {
    private let key: StoreKey
    private let head: HTTPRequestHead
    private let responder: HTTPResponder
    private let representation: ValueRepresentation
    private let hub: ChangeHub
    /// Without If-None-Match, a watch waits for an absent key to appear.
    private let waitsForCreation: Bool
    // Guarded by `lock`.
    private let lock = Lock()
    private var watcherID: UInt64?
    private var heldBack: HTTPResponse?
    /// The request ended (answered, cancelled, timed out): register no more.
    private var finished = false

    init(key: StoreKey, request: RouteRequest, representation: ValueRepresentation, hub: ChangeHub) {
        self.key = key
        self.head = request.head
        self.responder = request.responder
        self.representation = representation
        self.hub = hub
        self.waitsForCreation = !request.head.headers.contains("If-None-Match")
    }

    /// Registers for the next change, then looks at the current value (in
    /// that order, so no change slips between). Returns the answer when the
    /// wait is over; nil while it goes on.
    func check(firstTime: Bool = false) throws(HTTPError) -> HTTPResponse? {
        guard register() else { return nil }
        let response: HTTPResponse
        do {
            response = try representation.response(key, head)
        } catch {
            return try settle(error)
        }
        return settle(response)
    }

    /// Registers for the next change; false when the request already ended.
    private func register() -> Bool {
        let id = hub.watch(key.string) { [self] in wake() }
        let stillWaiting = lock.withLock { () -> Bool in
            watcherID = id
            return !finished
        }
        if !stillWaiting {
            // Cancelled meanwhile: its handler may have removed the previous id, not this one.
            hub.unwatch(key.string, id: id)
        }
        return stillWaiting
    }

    /// nil, holding the answer back, when it says "nothing new" (304);
    /// else the answer, and the watch ends.
    private func settle(_ response: HTTPResponse) -> HTTPResponse? {
        if response.status == .notModified {
            lock.withLock { heldBack = response }
            return nil
        }
        end()
        return response
    }

    /// The same for an error: a 404 is "nothing new" while waiting for the
    /// key to be created; any other error ends the watch.
    private func settle(_ error: HTTPError) throws(HTTPError) -> HTTPResponse? {
        if error.status == .notFound && waitsForCreation {
            lock.withLock { heldBack = error.response }
            return nil
        }
        end()
        throw error
    }

    /// Waits for a change; at `deadline` the held-back answer is sent.
    func park(until deadline: DispatchTime) {
        let timeout = lock.withLock { heldBack } ?? HTTPResponse(status: .notModified)
        responder.answer(at: deadline, with: timeout)
        responder.whenCancelled { [self] in end() }
    }

    /// No more waiting: removes the current registration.
    private func end() {
        let id: UInt64? = lock.withLock {
            finished = true
            defer { watcherID = nil }
            return watcherID
        }
        if let id { hub.unwatch(key.string, id: id) }
    }

    /// The key changed (on the hub's delivery queue). A store whose reads
    /// are round trips answers later, so the queue goes on to the next
    /// watcher at once.
    private func wake() {
        guard !responder.isFinished, !lock.withLock({ finished }) else { return }
        guard representation.store.answersLater else {
            do {
                if let answer = try check() { responder.respond(answer) }
            } catch {
                responder.respond(error.response)
            }
            return
        }
        checkLater(then: nil)
    }

    /// The first look for a store that answers later: registers, reads the
    /// key without holding the connection's thread, then answers or parks
    /// until `deadline`.
    func start(parkingUntil deadline: DispatchTime) {
        checkLater(then: deadline)
    }

    /// `check`, with the read answered later; `park`: the first look, which
    /// parks the request when there is nothing new yet.
    private func checkLater(then park: DispatchTime?) {
        guard register() else { return }
        representation.store.open(key) { [self] opened in
            do throws(HTTPError) {
                let answer: HTTPResponse?
                do throws(HTTPError) {
                    answer = settle(try representation.response(opened: opened, head))
                } catch {
                    answer = try settle(error)
                }
                if let answer {
                    responder.respond(answer)
                } else if let park {
                    self.park(until: park)
                }
            } catch {
                responder.respond(error.response)
            }
        }
    }
}
