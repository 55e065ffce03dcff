import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// The subresources a client reads whose answer is the same for every
/// bucket and object in Larder, which has one owner and keeps no versions:
/// GetBucketAcl and GetObjectAcl (the owner's FULL_CONTROL), and
/// GetBucketVersioning (never enabled: an empty configuration, as S3 gives
/// for a bucket never versioned; s3fs asks it before removing a bucket).
/// PutBucketAcl and PutObjectAcl accept a canned ACL or an
/// `AccessControlPolicy` document and change nothing: Larder has one owner
/// and enforces no ACL. PutBucketVersioning and the rest stay 501.
struct FixedSubresources: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations

    func bucketACL(_ bucket: String, _ call: S3Call) {
        call.answer(buckets.exists(bucket)) { exists in
            guard try exists.get() else { throw S3Error.noSuchBucket(bucket) }
            return Self.ownerFullControl()
        }
    }

    func objectACL(_ key: StoreKey, bucket: String, objectKey: String, _ call: S3Call) {
        call.answer(objectExists(key, bucket: bucket, objectKey: objectKey)) { result in
            _ = try result.get()
            return Self.ownerFullControl()
        }
    }

    /// True when the object is there; NoSuchKey, or NoSuchBucket when its bucket is not either.
    private func objectExists(_ key: StoreKey, bucket: String, objectKey: String) -> StoreReply<Bool> {
        let buckets = self.buckets
        return store.currentMetadata(of: key).then { meta in
            guard case .success(.none) = meta else { return .now(meta.map { _ in true }) }
            return buckets.exists(bucket).map { exists throws -> Bool in
                throw exists ? S3Error.noSuchKey(objectKey) : S3Error.noSuchBucket(bucket)
            }
        }
    }

    func versioning(_ bucket: String, _ call: S3Call) {
        call.answer(buckets.exists(bucket)) { exists in
            guard try exists.get() else { throw S3Error.noSuchBucket(bucket) }
            var xml = S3XML()
            xml.text += "<VersioningConfiguration xmlns=\"\(S3XML.namespace)\"/>"
            return xml.response()
        }
    }

    /// The canned ACLs S3 knows (`x-amz-acl`); any other name is refused as S3 refuses it.
    static let cannedACLs: Set<String> = [
        "private", "public-read", "public-read-write", "authenticated-read", "aws-exec-read",
        "bucket-owner-read", "bucket-owner-full-control", "log-delivery-write",
    ]

    /// Refuses an `x-amz-acl` that names no canned ACL (CreateBucket,
    /// PutObject and the ACL puts accept the others, and change nothing).
    static func checkCannedACL(_ head: HTTPRequestHead) throws(S3Error) {
        if let acl = head.headers["x-amz-acl"] { try checkCannedACL(acl) }
    }

    /// `acl`, from a header or a browser upload's field, is one of S3's canned ACLs.
    static func checkCannedACL(_ acl: String) throws(S3Error) {
        guard cannedACLs.contains(acl) else { throw S3Error.invalidArgument("Invalid canned ACL: \(acl)") }
    }

    /// PutBucketAcl, PutObjectAcl: the bucket (and object) must exist; the
    /// ACL, canned or a document (read and dropped), changes nothing.
    func putACL(_ path: S3Path, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        try Self.checkCannedACL(call.head)
        let checks = try BodyChecks(call.head, payload: verified.payload)
        let buckets = self.buckets
        return .receive(SmallBodySink(call: call, verified: verified, checks: checks, limit: 64 << 10) { [self] body in
            if !body.isEmpty, !String(decoding: body, as: UTF8.self).contains("AccessControlPolicy") {
                call.fail(DeleteRequest.malformed)
                return
            }
            switch path {
            case .bucket(let bucket):
                call.answer(buckets.exists(bucket)) { exists in
                    guard try exists.get() else { throw S3Error.noSuchBucket(bucket) }
                    return HTTPResponse(status: .ok)
                }
            case .object(let bucket, let key):
                guard let storeKey = try? BucketLayout.key(bucket: bucket, objectKey: key) else {
                    call.fail(S3Error.noSuchKey(String(decoding: key, as: UTF8.self)))
                    return
                }
                call.answer(objectExists(storeKey, bucket: bucket, objectKey: String(decoding: key, as: UTF8.self))) { result in
                    _ = try result.get()
                    return HTTPResponse(status: .ok)
                }
            default:
                call.fail(S3Error.methodNotAllowed)
            }
        })
    }

    static func ownerFullControl() -> HTTPResponse {
        var xml = S3XML()
        xml.open("AccessControlPolicy", namespaced: true)
        xml.open("Owner")
        xml.element("ID", S3Owner.id)
        xml.element("DisplayName", S3Owner.displayName)
        xml.close("Owner")
        xml.open("AccessControlList")
        xml.open("Grant")
        xml.text += "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">"
        xml.element("ID", S3Owner.id)
        xml.element("DisplayName", S3Owner.displayName)
        xml.close("Grantee")
        xml.element("Permission", "FULL_CONTROL")
        xml.close("Grant")
        xml.close("AccessControlList")
        xml.close("AccessControlPolicy")
        return xml.response()
    }
}
