import LarderModel
import LarderHTTP
import LarderRouting
import LarderStorage
import LarderValueFile
import LarderSharing
import LarderSupport
import LarderStoreVocabulary

/// `/store/...`: a path ending in `/` (or empty) is a prefix — listing, bulk
/// delete, create under a generated key; anything else is a key (`ValueRoutes`).
struct StoreRoutes: Route {
    let store: any ValueStore
    let values: ValueRoutes
    let logger: Logger

    static let prefixMethods = "GET, HEAD, POST, DELETE, OPTIONS"

    init(store: any ValueStore, hub: ChangeHub, logger: Logger) {
        self.store = store
        self.values = ValueRoutes(store: store, hub: hub, logger: logger)
        self.logger = logger
    }

    func handle(_ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let rest = request.rest
        // (The last byte compared: `hasSuffix` costs hundreds of instructions.)
        guard rest.isEmpty || rest.utf8.last == 0x2F else {
            let key = try ErrorMapping.run(logger) { try StoreKey(percentEncoded: rest) }
            return try values.handle(key, request)
        }
        let prefix = try ErrorMapping.run(logger) { try StorePrefix(bytes: try StoreKey.percentDecode(rest)) }
        switch request.method {
        case .get, .head:
            return try list(prefix, request)
        case .delete:
            let logger = self.logger
            return try .after(store.deletePrefix(prefix), request.responder) { deleted throws(HTTPError) in
                .json(.ok, DeletedCount(deleted: try ErrorMapping.run(logger) { try deleted.get() }))
            }
        case .post: return try create(under: prefix, request)
        case .options: return .respond(.allow(Self.prefixMethods))
        default:
            throw HTTPError(.methodNotAllowed, .methodNotAllowed,
                            "\(request.method) needs a key; a path ending in '/' is a prefix",
                            headers: [("Allow", Self.prefixMethods)])
        }
    }

    /// `POST /store/<prefix>/`: the body under a new key, unique and sorting
    /// after every key generated before it.
    private func create(under prefix: StorePrefix, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        let encoding = try ValueRoutes.bodyEncoding(head)
        let expires = try ValueRoutes.expiry(head, clock: store.clock)
        let upload = try ErrorMapping.run(logger) { () throws -> ValueWriter in
            let upload = try store.beginCreate(under: prefix, contentType: head.headers["Content-Type"] ?? "application/octet-stream",
                                               encoding: encoding, expiresNanos: expires)
            if let length = head.contentLength {
                do { try upload.expect(bytes: length) } catch { upload.abort(); throw error }
            }
            return upload
        }
        // The key is the one the write was published under (a store may
        // give it at commit).
        return .receiveBody(UploadSink(upload: upload, responder: request.responder, logger: logger) { outcome in
            let key = outcome.metadata.key
            return .json(.created, CreatedKey(key: key),
                         headers: [("Location", "/store/" + StoreKey.percentEncode(key))] + ValueRoutes.writeHeaders(outcome.metadata))
        })
    }

    private func list(_ prefix: StorePrefix, _ request: RouteRequest) throws(HTTPError) -> RouteAnswer {
        let head = request.head
        let query = try QueryParameters(head.query)
        let limit = try query.integer("limit", default: 1000, range: 1...10_000, clampUpper: true)
        let delimiter = query["delimiter"]
        if let delimiter, delimiter != "/", !delimiter.isEmpty {
            throw HTTPError(.badRequest, .invalidArgument, "only '/' is supported as a delimiter")
        }
        let after = query["after"].flatMap { $0.isEmpty ? nil : $0 }
        let logger = self.logger
        return try .after(store.list(prefix: prefix, after: after, limit: limit, groupByDirectory: delimiter == "/"),
                          request.responder) { listed throws(HTTPError) in
            let listing = try ErrorMapping.run(logger) { try listed.get() }
            let page = ModelJSON.encode(ListingPage(prefix: prefix.string, keys: listing.values.map(\.info),
                                                    prefixes: listing.prefixes, next: listing.next))
            return ListingValidator.response(page, ifNoneMatch: head.headers.values("If-None-Match"))
        }
    }
}
