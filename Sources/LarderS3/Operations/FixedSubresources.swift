import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// The subresources a client reads whose answer is the same for every
/// bucket and object in Larder, which has one owner and keeps no versions:
/// GetBucketAcl and GetObjectAcl (the owner's FULL_CONTROL), and
/// GetBucketVersioning (never enabled: an empty configuration, as S3 gives
/// for a bucket never versioned; s3fs asks it before removing a bucket).
/// Changing them (PutBucketAcl, PutBucketVersioning, ...) stays 501.
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
        let buckets = self.buckets
        let found: StoreReply<Bool> = store.currentMetadata(of: key).then { meta in
            guard case .success(.none) = meta else { return .now(meta.map { _ in true }) }
            return buckets.exists(bucket).map { exists throws -> Bool in
                throw exists ? S3Error.noSuchKey(objectKey) : S3Error.noSuchBucket(bucket)
            }
        }
        call.answer(found) { result in
            _ = try result.get()
            return Self.ownerFullControl()
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
