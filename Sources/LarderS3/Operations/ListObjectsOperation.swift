import FoundationEssentials
import LarderHTTP
import LarderStorage
import LarderValueFile

/// ListObjectsV2, ListObjects (v1) and ListObjectVersions of a bucket: the
/// store's listing of the bucket's prefix, narrowed to S3's prefix (which
/// may end inside a key segment), grouped by the delimiter, a page of at
/// most `max-keys`. Larder keeps no versions: ListObjectVersions answers
/// each current object as its one version, `null`, as S3 does for a bucket
/// never versioned (what generic cleanup code lists before deleting).
///
/// The store lists whole segments, so it is asked for the prefix up to its
/// last `/` and the rest is filtered here; with the delimiter `/` the store
/// groups (skipping whole directories), any other delimiter is grouped
/// here. A continuation token is the last entry answered (a key, or a
/// common prefix whose keys the next page skips), base64 as S3's are opaque.
struct ListObjectsOperation: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations

    static let maxKeysLimit = 1000

    /// Which of the three listings: they differ in their markers and answer.
    enum Kind: Sendable { case v1, v2, versions }

    /// What one listing asks, read from the query.
    struct Request: Sendable {
        var bucket: String
        var kind: Kind
        var prefix: String
        var delimiter: String
        var maxKeys: Int
        var continuationToken: String?
        var startAfter: String?
        var urlEncoded: Bool
        /// Each object's owner in the answer: always but in v2, there with `fetch-owner=true`.
        var fetchOwner: Bool
    }

    func list(_ bucket: String, _ query: S3Query, _ call: S3Call) throws(S3Error) {
        let kind: Kind = query.has("versions") ? .versions : query["list-type"] == "2" ? .v2 : .v1
        var maxKeys = Self.maxKeysLimit
        if let text = query["max-keys"] {
            guard let n = Int(text), n >= 0 else { throw S3Error.invalidArgument("max-keys must be a non-negative integer") }
            maxKeys = min(n, Self.maxKeysLimit)
        }
        if let type = query["encoding-type"], type != "url" {
            throw S3Error.invalidArgument("Invalid Encoding Method specified in Request")
        }
        if kind == .versions, let versionMarker = query["version-id-marker"], !versionMarker.isEmpty {
            guard query["key-marker"].map({ !$0.isEmpty }) ?? false else {
                throw S3Error.invalidArgument("A version-id marker cannot be specified without a key marker.")
            }
            guard versionMarker == "null" else { throw S3Error.invalidArgument("Invalid version id specified") }
        }
        // An empty continuation token is none (boto3's paginators send one), echoed as sent.
        let token = kind == .v2 ? query["continuation-token"] : nil
        let after = switch kind {
        case .v1: query["marker"]
        case .v2: query["start-after"]
        case .versions: query["key-marker"]
        }
        let request = Request(bucket: bucket, kind: kind, prefix: query["prefix"] ?? "", delimiter: query["delimiter"] ?? "",
                              maxKeys: maxKeys, continuationToken: token, startAfter: after,
                              urlEncoded: query["encoding-type"] == "url", fetchOwner: kind != .v2 || query["fetch-owner"] == "true")
        let cursor = try Self.cursor(request)
        let run = ListingRun(store: store, request: request, cursor: cursor)
        let buckets = self.buckets
        run.start { result in
            switch result {
            case .failure(let error):
                call.fail(S3Call.s3Error(error, logger: call.logger, context: "list \(bucket)"))
            case .success(let page) where page.entries.isEmpty && cursor == nil:
                // Nothing under the bucket: it may not exist at all.
                call.answer(buckets.exists(bucket)) { exists in
                    guard try exists.get() else { throw S3Error.noSuchBucket(bucket) }
                    return Self.xml(page, request).response()
                }
            case .success(let page):
                call.respond(Self.xml(page, request).response())
            }
        }
    }

    /// Where the listing starts: after the continuation token's entry, or
    /// after `start-after` (v1: `marker`); nil: at the start.
    static func cursor(_ request: Request) throws(S3Error) -> ListingCursor? {
        if let token = request.continuationToken, !token.isEmpty {
            guard let decoded = ListingCursor(token: token) else {
                throw S3Error.invalidArgument("The continuation token provided is incorrect")
            }
            return decoded
        }
        if let after = request.startAfter, !after.isEmpty {
            let escaped = String(decoding: S3KeyEscaping.escape(Array(after.utf8)), as: UTF8.self)
            return ListingCursor(key: request.bucket + "/" + escaped, isGroup: false)
        }
        return nil
    }

    static func xml(_ page: ListingRun.Page, _ request: Request) -> S3XML {
        func name(_ storeKey: String) -> String { encode(BucketLayout.objectKey(storeKey, bucket: request.bucket), request) }
        let root = request.kind == .versions ? "ListVersionsResult" : "ListBucketResult"
        var xml = S3XML()
        xml.open(root, namespaced: true)
        xml.element("Name", request.bucket)
        xml.element("Prefix", encode(request.prefix, request))
        switch request.kind {
        case .v2:
            xml.element("KeyCount", String(page.entries.count))
            if let token = request.continuationToken { xml.element("ContinuationToken", token) }
            if let after = request.startAfter { xml.element("StartAfter", encode(after, request)) }
        case .v1:
            xml.element("Marker", encode(request.startAfter ?? "", request))
        case .versions:
            xml.element("KeyMarker", encode(request.startAfter ?? "", request))
            xml.element("VersionIdMarker", request.startAfter.map { $0.isEmpty ? "" : "null" } ?? "")
        }
        xml.element("MaxKeys", String(request.maxKeys))
        if !request.delimiter.isEmpty { xml.element("Delimiter", encode(request.delimiter, request)) }
        if request.urlEncoded { xml.element("EncodingType", "url") }
        xml.element("IsTruncated", page.next == nil ? "false" : "true")
        if let next = page.next {
            switch request.kind {
            case .v2: xml.element("NextContinuationToken", next.token)
            case .v1: xml.element("NextMarker", name(next.key))
            case .versions:
                xml.element("NextKeyMarker", name(next.key))
                xml.element("NextVersionIdMarker", "null")
            }
        }
        for entry in page.entries {
            guard case .object(let value) = entry else { continue }
            xml.open(request.kind == .versions ? "Version" : "Contents")
            xml.element("Key", name(value.key))
            if request.kind == .versions {
                xml.element("VersionId", "null")
                xml.element("IsLatest", "true")
            }
            xml.element("LastModified", S3Time.iso8601(nanos: value.metadata.modifiedNanos))
            xml.element("ETag", value.metadata.s3ETag)
            xml.element("Size", String(value.metadata.size))
            if request.fetchOwner {
                xml.open("Owner")
                xml.element("ID", S3Owner.id)
                xml.element("DisplayName", S3Owner.displayName)
                xml.close("Owner")
            }
            xml.element("StorageClass", "STANDARD")
            xml.close(request.kind == .versions ? "Version" : "Contents")
        }
        for entry in page.entries {
            guard case .commonPrefix(let prefix) = entry else { continue }
            xml.open("CommonPrefixes")
            xml.element("Prefix", name(prefix))
            xml.close("CommonPrefixes")
        }
        xml.close(root)
        return xml
    }

    /// `encoding-type=url`: keys as URL-encoded text (SDKs decode them).
    private static func encode(_ text: String, _ request: Request) -> String {
        request.urlEncoded ? AWSURIEncoding.encode(text.utf8, keepSlash: true) : text
    }
}

/// Where a listing goes on from: the last entry a page answered.
struct ListingCursor: Sendable, Equatable {
    /// The Larder key (bucket prefix included) or common prefix.
    let key: String
    /// A common prefix: every key under it was answered with it.
    let isGroup: Bool

    init(key: String, isGroup: Bool) {
        self.key = key
        self.isGroup = isGroup
    }

    init?(token: String) {
        guard let data = Data(base64Encoded: token), let text = String(data: data, encoding: .utf8), text.count >= 2 else { return nil }
        switch text.prefix(2) {
        case "k:": isGroup = false
        case "p:": isGroup = true
        default: return nil
        }
        key = String(text.dropFirst(2))
    }

    var token: String { Data(((isGroup ? "p:" : "k:") + key).utf8).base64EncodedString() }
}
