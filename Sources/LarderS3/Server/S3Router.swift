import LarderHTTP
import LarderRouting
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// The S3 face's one route, mounted at `/` on the listener's table (the
/// routing core both faces share, `RouteTable`): verifies the signature, finds the
/// namespace the request's access key works in (its store, journal and
/// fault rules, from the server: `S3Namespaces`), then sends the request to
/// the operation its method, path and query name: `/` (the service),
/// `/bucket`, `/bucket/key`, or `/key` on `Host: bucket.localhost`.
final class S3Router: Route {
    private let authenticator: SigV4Authenticator
    private let credentials: S3Credentials
    private let namespaces: any S3Namespaces
    private let counts: S3RequestCounts
    private let maxObjectBytes: Int64
    private let logger: Logger
    private let requestIDs = RequestIDs()

    /// `keys`: the access keys accepted (`S3Configuration.acceptedKeys`).
    init(namespaces: any S3Namespaces, configuration: S3Configuration, keys: S3Credentials, counts: S3RequestCounts,
         maxObjectBytes: Int64, logger: Logger) {
        authenticator = SigV4Authenticator(credentials: keys, maxClockSkewSeconds: configuration.maxClockSkewSeconds)
        credentials = keys
        self.namespaces = namespaces
        self.counts = counts
        self.maxObjectBytes = maxObjectBytes
        self.logger = logger
    }

    /// Subresources S3 has and this face does not (yet): a clear 501 rather
    /// than an answer that means something else (a listing for `?acl`).
    private static let unsupported: Set<String> = [
        "acl", "policy", "versioning", "lifecycle", "encryption", "object-lock", "website", "replication", "tagging",
        "cors", "logging", "notification", "retention", "legal-hold",
        "accelerate", "analytics", "inventory", "metrics", "ownershipControls", "publicAccessBlock", "requestPayment",
        "intelligent-tiering", "restore", "select", "torrent", "policyStatus",
    ]

    func handle(_ request: RouteRequest) -> RouteAnswer {
        switch serve(request.head, request.responder) {
        case .ignore: .later
        case .receive(let sink): .receiveBody(sink)
        case .answer(let response): .respond(response)
        }
    }

    private func serve(_ head: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
        var call = S3Call(head: head, responder: responder, requestID: requestIDs.next(), logger: logger)
        let virtualHost = head.headers["Host"].flatMap(S3Path.virtualHostBucket)
        let path = S3Path(head.path, virtualHost: virtualHost)
        let query = S3Query(head.query)
        let op = S3OperationName.of(head.method, path, query, copySource: head.headers["x-amz-copy-source"] != nil)
        let target = Self.pathStyleTarget(head, virtualHost)
        // A browser's preflight is never signed: it is answered by the
        // bucket's CORS rules (in the default namespace: it names no key).
        if head.method == .options {
            responder.observe(with: S3AnswerRecord(op: op, target: target, namespace: namespaces.defaultNamespace, counts: counts))
            preflight(call, path)
            return .ignore
        }
        // A browser upload is signed in its form, not its headers.
        if head.method == .post, case .bucket(let bucket) = path, !query.has("delete"),
           let boundary = head.headers["Content-Type"].flatMap(FormDataReader.boundary) {
            return postObject(call, bucket: bucket, boundary: boundary, op: op, target: target)
        }
        let verified: SigV4Authenticator.Verified
        let namespace: any S3Namespace
        do {
            verified = try authenticator.verify(head, query: query, nowSeconds: signingNowNanos(head) / 1_000_000_000,
                                                virtualHostBucket: virtualHost)
            namespace = try self.namespace(of: verified.accessKey)
        } catch {
            responder.observe(with: S3AnswerRecord(op: op, target: target, namespace: refusedNamespace(head), counts: counts))
            // A refused request's body is not read: the HTTP layer skips it
            // or closes the connection (never waiting for an upload).
            // An unsigned request naming a bucket there is not is told so
            // (404 NoSuchBucket), as S3 tells anonymous callers; not where no
            // key is accepted (a token turned them off): nothing is open there.
            if !credentials.keys.isEmpty, head.headers["Authorization"] == nil, !query.has("X-Amz-Signature"), !query.has("Signature"),
               let bucket = path.bucket, BucketLayout.isValidName(bucket) {
                let buckets = BucketOperations(store: namespaces.defaultNamespace.store)
                call.answer(buckets.exists(bucket)) { exists in
                    guard try exists.get() else { throw S3Error.noSuchBucket(bucket) }
                    throw error
                }
                return .ignore
            }
            call.fail(error)
            return .ignore
        }
        responder.observe(with: S3AnswerRecord(op: op, target: target, namespace: namespace, counts: counts))
        // After the signature, as the plain API's faults come after its token.
        if namespace.hasFaults, let fault = namespace.fault(method: head.method, storePath: Self.storePath(path, head, virtualHost)),
           let action = S3FaultAnswer.apply(fault, to: &call, path: path) {
            return action
        }
        let operations = S3Operations(store: namespace.store, maxObjectBytes: maxObjectBytes)
        if let origin = head.headers["Origin"], let bucket = path.bucket, BucketLayout.isValidName(bucket) {
            call.cors = CORSHeaders(operations.settings.settings(bucket), origin: origin,
                                    method: head.headers["Access-Control-Request-Method"] ?? head.method.description)
        }
        do {
            return try route(call, verified, path, query, operations)
        } catch {
            call.fail(error)
            return .ignore
        }
    }

    /// PostObject: the form is read, and checked once its fields are in
    /// (`PostObjectSink`); its namespace is the one its signer's key works
    /// in, whose journal then records it (until then the default's).
    private func postObject(_ call: S3Call, bucket: String, boundary: String, op: String, target: String) -> HTTPBodyAction {
        guard !bucket.hasPrefix("."), !bucket.utf8.contains(0x2F), (try? StoreKey(bucket)) != nil else {
            call.fail(.noSuchBucket(bucket))
            return .ignore
        }
        let (counts, maxObjectBytes) = (self.counts, self.maxObjectBytes)
        var call = call
        // A page's upload reads its answer by the bucket's CORS rules: the
        // default namespace's until the form names its signer's.
        if let origin = call.head.headers["Origin"] {
            let settings = S3Operations(store: namespaces.defaultNamespace.store, maxObjectBytes: maxObjectBytes).settings
            call.cors = CORSHeaders(settings.settings(bucket), origin: origin, method: "POST")
        }
        call.responder.observe(with: S3AnswerRecord(op: op, target: target, namespace: namespaces.defaultNamespace, counts: counts))
        let context = PostObjectSink.Context(bucket: bucket, credentials: credentials) { [self] accessKey throws(S3Error) in
            let namespace = try self.namespace(of: accessKey)
            call.responder.observe(with: S3AnswerRecord(op: op, target: target, namespace: namespace, counts: counts))
            return S3Operations(store: namespace.store, maxObjectBytes: maxObjectBytes)
        }
        return .receive(PostObjectSink(call: call, boundary: boundary, context: context))
    }

    /// A request the HTTP layer refuses before `handle` (a body over the
    /// limit) is counted and journaled too.
    func answerObserver(forRefused head: HTTPRequestHead) -> (any HTTPAnswerObserver)? {
        let host = head.headers["Host"]
        let op = S3OperationName.of(head.method, S3Path(head.path, host: host), S3Query(head.query),
                                    copySource: head.headers["x-amz-copy-source"] != nil)
        return S3AnswerRecord(op: op, target: Self.pathStyleTarget(head, host.flatMap(S3Path.virtualHostBucket)),
                              namespace: refusedNamespace(head), counts: counts)
    }

    /// The namespace a verified key works in, made on first use.
    private func namespace(of accessKey: String) throws(S3Error) -> any S3Namespace {
        guard let name = credentials.namespace(for: accessKey) else { return namespaces.defaultNamespace }
        do {
            return try namespaces.namespace(name)
        } catch {
            throw S3Error(error.status, error.code, error.message)
        }
    }

    /// The time a signature's window and a presigned URL's expiry are
    /// judged by: the clock of the namespace the request's key works in
    /// (API.md "Time under the test's control"), which a test may have
    /// moved. The claim is looked at only when some key has a namespace of
    /// its own; a namespace not open here is not opened for an unverified
    /// request, and its clock (not moved on this server) is the system's.
    private func signingNowNanos(_ head: HTTPRequestHead) -> Int64 {
        let defaultClock = namespaces.defaultNamespace.store.clock
        guard !credentials.namespaces.isEmpty, let key = S3ClaimedKey.of(head),
              let name = credentials.namespace(for: key) else { return defaultClock.nowNanos() }
        return namespaces.existingNamespace(name)?.store.clock.nowNanos() ?? Clock.nowNanos()
    }

    /// Whose journal a refused request goes in: the namespace of the key it
    /// claims if that is open (a refusal makes none), the default one for a
    /// key without one (or an unknown key); none for a key whose namespace
    /// is not open.
    private func refusedNamespace(_ head: HTTPRequestHead) -> (any S3Namespace)? {
        guard let key = S3ClaimedKey.of(head), let name = credentials.namespace(for: key) else { return namespaces.defaultNamespace }
        return namespaces.existingNamespace(name)
    }

    /// The target as path style writes it (`/bucket/key?query`): a
    /// virtual-host request's journal entry reads as a path-style one's.
    static func pathStyleTarget(_ head: HTTPRequestHead, _ virtualHost: String?) -> String {
        guard let bucket = virtualHost else { return head.target }
        return "/" + bucket + head.target
    }

    /// The request's path as the plain API spells it, which fault rules'
    /// prefixes are compared with: `/store/<bucket>/<key>` for an object
    /// (its key as sent), `/store/<bucket>/` for a bucket's operations (the
    /// bucket's prefix, as a listing of `/store/<bucket>/` is), `/store/`
    /// for the service's.
    static func storePath(_ path: S3Path, _ head: HTTPRequestHead, _ virtualHost: String?) -> String {
        switch path {
        case .service: return "/store/"
        case .bucket(let bucket): return "/store/" + bucket + "/"
        case .object(let bucket, _): return virtualHost == nil ? "/store" + head.path : "/store/" + bucket + head.path
        case .invalid: return "/store" + head.path
        }
    }

    private func route(_ call: S3Call, _ verified: SigV4Authenticator.Verified, _ path: S3Path, _ query: S3Query,
                       _ operations: S3Operations) throws(S3Error) -> HTTPBodyAction {
        let readsFixed = call.head.method == .get && path.bucket != nil && (query.has("acl") || query.has("versioning"))
        let writesACL = call.head.method == .put && path.bucket != nil && query.has("acl")
        var objectTagging = false
        if case .object = path, query.has("tagging") { objectTagging = true }
        var bucketSettings: String?
        if case .bucket = path, query.has("cors") || query.has("encryption") || query.has("tagging") {
            bucketSettings = query.has("cors") ? "cors" : query.has("encryption") ? "encryption" : "tagging"
        }
        if !readsFixed && !writesACL && !objectTagging && bucketSettings == nil, let name = query.names.first(where: { Self.unsupported.contains($0) }) {
            throw S3Error.notImplemented("the ?\(name) subresource is not supported yet by Larder's S3 face")
        }
        let method = call.head.method
        // Any bucket a request names is one key segment not starting with
        // `.` (S3's names never do): Larder's own `.larder-s3/` stays hidden.
        // (A virtual-host bucket is what precedes `.localhost`: it may hold a `/`, which no bucket name has.)
        if let bucket = path.bucket, bucket.hasPrefix(".") || bucket.utf8.contains(0x2F) || (try? StoreKey(bucket)) == nil {
            throw method == .put ? S3Error.invalidBucketName(bucket) : S3Error.noSuchBucket(bucket)
        }
        if readsFixed { return try readFixed(call, path, query, operations.fixed) }
        if let subresource = bucketSettings, case .bucket(let bucket) = path {
            return try settings(bucket, call, verified, subresource, operations.settings)
        }
        if writesACL { return try operations.fixed.putACL(path, call, verified) }
        if method == .put { try FixedSubresources.checkCannedACL(call.head) }
        // Larder keeps one version of each object, S3's `null` one (as in a
        // bucket never versioned): any other version id names none.
        if case .object = path, let version = query["versionId"], version != "null" {
            throw S3Error.invalidArgument("Invalid version id specified")
        }
        switch path {
        case .service:
            guard method == .get || method == .head else { throw S3Error.methodNotAllowed }
            try operations.buckets.listBuckets(call, query)
            return .ignore
        case .bucket(let bucket):
            switch method {
            case .put: return try operations.buckets.create(bucket, call, verified)
            case .post where query.has("delete"): return try operations.deleteObjects.delete(bucket, call, verified)
            case .get where query.has("uploads"): operations.multipart.listUploads(bucket: bucket, query, call)
            case .head: operations.buckets.head(bucket, call)
            case .delete: operations.buckets.delete(bucket, call)
            case .get:
                if query.has("location") {
                    operations.buckets.location(bucket, call)
                } else {
                    try operations.listing.list(bucket, query, call)
                }
            default: throw S3Error.methodNotAllowed
            }
            return .ignore
        case .object(let bucket, let key):
            let storeKey = try BucketLayout.key(bucket: bucket, objectKey: key)
            let objectKey = String(decoding: key, as: UTF8.self)
            if let id = query["uploadId"] {
                switch method {
                case .put where call.head.headers["x-amz-copy-source"] != nil:
                    try operations.copyObject.copyPart(bucket: bucket, id: id, number: query["partNumber"], call)
                case .put: return try operations.multipart.uploadPart(bucket: bucket, id: id, number: query["partNumber"], call, verified)
                case .post: return try operations.completion.complete(storeKey, bucket: bucket, objectKey: objectKey, id: id, call, verified)
                case .delete: try operations.multipart.abort(bucket: bucket, id: id, call)
                case .get: try operations.multipart.listParts(bucket: bucket, objectKey: objectKey, id: id, query, call)
                default: throw S3Error.methodNotAllowed
                }
                return .ignore
            }
            if objectTagging {
                switch method {
                case .get: operations.tagging.get(storeKey, bucket: bucket, objectKey: objectKey, call)
                case .put: return try operations.tagging.put(storeKey, bucket: bucket, objectKey: objectKey, call, verified)
                case .delete: operations.tagging.delete(storeKey, bucket: bucket, objectKey: objectKey, call)
                default: throw S3Error.methodNotAllowed
                }
                return .ignore
            }
            switch method {
            case .post where query.has("uploads"):
                try operations.multipart.create(bucket: bucket, objectKey: objectKey, call)
            case .put:
                if call.head.headers["x-amz-copy-source"] != nil {
                    try operations.copyObject.copy(to: storeKey, bucket: bucket, call)
                    return .ignore
                }
                return try operations.objects.put(storeKey, bucket: bucket, call, verified)
            case .get where query.has("attributes"):
                try operations.objectAttributes.attributes(storeKey, bucket: bucket, objectKey: objectKey, call)
            case .get, .head: operations.objects.get(storeKey, bucket: bucket, objectKey: objectKey, call)
            case .delete: operations.objects.delete(storeKey, bucket: bucket, call)
            default: throw S3Error.methodNotAllowed
            }
            return .ignore
        case .invalid(let why):
            throw S3Error.invalidArgument(why)
        }
    }
}

extension S3Router {
    /// Put/Get/DeleteBucketCors, …Encryption, …Tagging, by the subresource named.
    private func settings(_ bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified, _ subresource: String,
                          _ settings: BucketSettingsOperations) throws(S3Error) -> HTTPBodyAction {
        switch (call.head.method, subresource) {
        case (.get, "cors"): settings.getCORS(bucket, call)
        case (.put, "cors"): return try settings.putCORS(bucket, call, verified)
        case (.delete, "cors"): settings.deleteCORS(bucket, call)
        case (.get, "encryption"): settings.getEncryption(bucket, call)
        case (.put, "encryption"): return try settings.putEncryption(bucket, call, verified)
        case (.delete, "encryption"): settings.deleteEncryption(bucket, call)
        case (.get, _): settings.getTagging(bucket, call)
        case (.put, _): return try settings.putTagging(bucket, call, verified)
        case (.delete, _): settings.deleteTagging(bucket, call)
        default: throw S3Error.methodNotAllowed
        }
        return .ignore
    }

    /// A browser's preflight, by its bucket's CORS rules.
    private func preflight(_ call: S3Call, _ path: S3Path) {
        guard let bucket = path.bucket, BucketLayout.isValidName(bucket) else {
            call.fail(S3Error(.badRequest, "BadRequest", "A preflight request names a bucket."))
            return
        }
        let settings = S3Operations(store: namespaces.defaultNamespace.store, maxObjectBytes: maxObjectBytes).settings
        call.answer(settings.settings(bucket)) { result in try CORSAnswers.preflight(call.head, rules: try result.get().cors) }
    }

    /// GetBucketAcl, GetObjectAcl, GetBucketVersioning: answers that do not depend on the bucket.
    private func readFixed(_ call: S3Call, _ path: S3Path, _ query: S3Query,
                           _ fixed: FixedSubresources) throws(S3Error) -> HTTPBodyAction {
        switch path {
        case .bucket(let bucket) where query.has("acl"): fixed.bucketACL(bucket, call)
        case .bucket(let bucket): fixed.versioning(bucket, call)
        case .object(let bucket, let key) where query.has("acl"):
            fixed.objectACL(try BucketLayout.key(bucket: bucket, objectKey: key), bucket: bucket,
                            objectKey: String(decoding: key, as: UTF8.self), call)
        default: throw S3Error.notImplemented("the ?\(query.names.first ?? "") subresource is not supported by Larder's S3 face")
        }
        return .ignore
    }
}

/// Request ids: a per-process random part and a counter, hex, as S3's are
/// opaque upper-case strings.
final class RequestIDs: Sendable {
    private let base = UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF
    private let counter = Locked<UInt64>(0)

    func next() -> String {
        let n = counter.withLock { c -> UInt64 in c += 1; return c }
        let hex = String(base, radix: 16, uppercase: true) + String(n, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }
}
