import LarderHTTP

/// S3's name for the operation a request asks for (`PutObject`,
/// `ListObjectsV2`), as AWS's API reference and SDKs name it: what the
/// request journal's `op` and `larder_s3_requests_total{op}` show. Read
/// from the method, the path and the query alone, before the signature is
/// checked, so a refused request is named too; those the face does not
/// support (yet) are named as well, so the journal tells what a client
/// tried. A request that is none of S3's is `Unknown`.
enum S3OperationName {
    static let unknown = "Unknown"

    static func of(_ method: HTTPMethod, _ path: S3Path, _ query: S3Query, copySource: Bool) -> String {
        switch path {
        case .service:
            return method == .get || method == .head ? "ListBuckets" : unknown
        case .bucket:
            return bucket(method, query)
        case .object:
            return object(method, query, copySource: copySource)
        case .invalid:
            return unknown
        }
    }

    /// Bucket subresources: `?name` → the operation's noun (`GetBucketAcl`).
    private static let bucketNouns: [String: String] = [
        "acl": "Acl", "policy": "Policy", "versioning": "Versioning", "lifecycle": "LifecycleConfiguration",
        "encryption": "Encryption", "object-lock": "ObjectLockConfiguration", "website": "Website",
        "replication": "Replication", "tagging": "Tagging", "cors": "Cors", "logging": "Logging",
        "notification": "NotificationConfiguration", "accelerate": "AccelerateConfiguration",
        "ownershipControls": "OwnershipControls", "publicAccessBlock": "PublicAccessBlock",
        "requestPayment": "RequestPayment", "policyStatus": "PolicyStatus",
    ]

    private static func bucket(_ method: HTTPMethod, _ query: S3Query) -> String {
        if let name = query.names.first(where: { bucketNouns[$0] != nil }), let noun = bucketNouns[name] {
            switch method {
            case .get, .head: return name == "publicAccessBlock" || name == "ownershipControls" || name == "policyStatus"
                ? "Get" + noun : "GetBucket" + noun
            case .put: return name == "publicAccessBlock" || name == "ownershipControls" ? "Put" + noun : "PutBucket" + noun
            case .delete: return name == "publicAccessBlock" || name == "ownershipControls" ? "Delete" + noun : "DeleteBucket" + noun
            default: return unknown
            }
        }
        switch method {
        case .get:
            if query.has("location") { return "GetBucketLocation" }
            if query.has("uploads") { return "ListMultipartUploads" }
            if query.has("versions") { return "ListObjectVersions" }
            return query["list-type"] == "2" ? "ListObjectsV2" : "ListObjects"
        case .head: return "HeadBucket"
        case .put: return "CreateBucket"
        case .delete: return "DeleteBucket"
        // Any other POST of a bucket is a browser upload's form.
        case .post: return query.has("delete") ? "DeleteObjects" : "PostObject"
        default: return unknown
        }
    }

    private static func object(_ method: HTTPMethod, _ query: S3Query, copySource: Bool) -> String {
        let upload = query.has("uploadId")
        switch method {
        case .get:
            if upload { return "ListParts" }
            if query.has("acl") { return "GetObjectAcl" }
            if query.has("tagging") { return "GetObjectTagging" }
            if query.has("attributes") { return "GetObjectAttributes" }
            if query.has("retention") { return "GetObjectRetention" }
            if query.has("legal-hold") { return "GetObjectLegalHold" }
            if query.has("torrent") { return "GetObjectTorrent" }
            return "GetObject"
        case .head: return "HeadObject"
        case .put:
            if upload && query.has("partNumber") { return copySource ? "UploadPartCopy" : "UploadPart" }
            if query.has("acl") { return "PutObjectAcl" }
            if query.has("tagging") { return "PutObjectTagging" }
            if query.has("retention") { return "PutObjectRetention" }
            if query.has("legal-hold") { return "PutObjectLegalHold" }
            return copySource ? "CopyObject" : "PutObject"
        case .delete:
            if upload { return "AbortMultipartUpload" }
            if query.has("tagging") { return "DeleteObjectTagging" }
            return "DeleteObject"
        case .post:
            if query.has("uploads") { return "CreateMultipartUpload" }
            if upload { return "CompleteMultipartUpload" }
            if query.has("restore") { return "RestoreObject" }
            if query.has("select") { return "SelectObjectContent" }
            return unknown
        default:
            return unknown
        }
    }
}
