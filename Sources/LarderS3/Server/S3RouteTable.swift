import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile

/// The S3 listener's only handler: verifies the signature, then sends the
/// request to the operation its method, path and query name: `/` (the
/// service), `/bucket`, `/bucket/key`, or `/key` on `Host: bucket.localhost`.
final class S3RouteTable: HTTPRequestHandler {
    private let authenticator: SigV4Authenticator
    private let buckets: BucketOperations
    private let objects: ObjectOperations
    private let listing: ListObjectsOperation
    private let deleteObjects: DeleteObjectsOperation
    private let copyObject: CopyObjectOperation
    private let multipart: MultipartOperations
    private let completion: MultipartCompletion
    private let logger: Logger
    private let requestIDs = RequestIDs()

    init(store: any ValueStore, configuration: S3Configuration, maxObjectBytes: Int64, logger: Logger) {
        authenticator = SigV4Authenticator(credentials: configuration.credentials,
                                           maxClockSkewSeconds: configuration.maxClockSkewSeconds)
        buckets = BucketOperations(store: store)
        objects = ObjectOperations(store: store, buckets: buckets, maxObjectBytes: maxObjectBytes)
        listing = ListObjectsOperation(store: store, buckets: buckets)
        deleteObjects = DeleteObjectsOperation(store: store, buckets: buckets)
        copyObject = CopyObjectOperation(store: store, buckets: buckets)
        multipart = MultipartOperations(store: store, buckets: buckets, objects: objects)
        completion = MultipartCompletion(store: store, maxObjectBytes: maxObjectBytes)
        self.logger = logger
    }

    /// Subresources S3 has and this face does not (yet): a clear 501 rather
    /// than an answer that means something else (a listing for `?acl`).
    private static let unsupported: Set<String> = [
        "acl", "policy", "versioning", "lifecycle", "encryption", "object-lock", "website", "replication", "tagging",
        "cors", "logging", "notification", "versions", "retention", "legal-hold",
        "accelerate", "analytics", "inventory", "metrics", "ownershipControls", "publicAccessBlock", "requestPayment",
        "intelligent-tiering", "restore", "select", "torrent", "attributes", "policyStatus",
    ]

    func handle(_ head: HTTPRequestHead, _ responder: HTTPResponder) -> HTTPBodyAction {
        let call = S3Call(head: head, responder: responder, requestID: requestIDs.next(), logger: logger)
        do {
            let verified = try authenticator.verify(head, nowSeconds: Clock.nowNanos() / 1_000_000_000)
            return try route(call, verified)
        } catch {
            // A refused request's body is not read: the HTTP layer skips it
            // or closes the connection (never waiting for an upload).
            call.fail(error)
            return .ignore
        }
    }

    private func route(_ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let query = S3Query(call.head.query)
        if let name = query.names.first(where: { Self.unsupported.contains($0) }) {
            throw S3Error.notImplemented("the ?\(name) subresource is not supported yet by Larder's S3 face")
        }
        let method = call.head.method
        let path = S3Path(call.head.path, host: call.head.headers["Host"])
        // Any bucket a request names is one key segment not starting with
        // `.` (S3's names never do): Larder's own `.larder-s3/` stays hidden.
        if let bucket = path.bucket, bucket.hasPrefix(".") || (try? StoreKey(bucket)) == nil {
            throw method == .put ? S3Error.invalidBucketName(bucket) : S3Error.noSuchBucket(bucket)
        }
        switch path {
        case .service:
            guard method == .get || method == .head else { throw S3Error.methodNotAllowed }
            buckets.listBuckets(call)
            return .ignore
        case .bucket(let bucket):
            switch method {
            case .put: return try buckets.create(bucket, call, verified)
            case .post where query.has("delete"): return try deleteObjects.delete(bucket, call, verified)
            case .get where query.has("uploads"): multipart.listUploads(bucket: bucket, query, call)
            case .head: buckets.head(bucket, call)
            case .delete: buckets.delete(bucket, call)
            case .get:
                if query.has("location") {
                    buckets.location(bucket, call)
                } else {
                    try listing.list(bucket, query, call)
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
                    throw S3Error.notImplemented("UploadPartCopy is not supported yet by Larder's S3 face")
                case .put: return try multipart.uploadPart(bucket: bucket, id: id, number: query["partNumber"], call, verified)
                case .post: return try completion.complete(storeKey, bucket: bucket, objectKey: objectKey, id: id, call, verified)
                case .delete: try multipart.abort(bucket: bucket, id: id, call)
                case .get: try multipart.listParts(bucket: bucket, objectKey: objectKey, id: id, query, call)
                default: throw S3Error.methodNotAllowed
                }
                return .ignore
            }
            switch method {
            case .post where query.has("uploads"):
                try multipart.create(bucket: bucket, objectKey: objectKey, call)
            case .put:
                if call.head.headers["x-amz-copy-source"] != nil {
                    try copyObject.copy(to: storeKey, bucket: bucket, call)
                    return .ignore
                }
                return try objects.put(storeKey, bucket: bucket, call, verified)
            case .get, .head: objects.get(storeKey, bucket: bucket, objectKey: objectKey, call)
            case .delete: objects.delete(storeKey, bucket: bucket, call)
            default: throw S3Error.methodNotAllowed
            }
            return .ignore
        case .invalid(let why):
            throw S3Error.invalidArgument(why)
        }
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
