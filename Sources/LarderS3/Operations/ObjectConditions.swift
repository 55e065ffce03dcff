import LarderHTTP
import LarderStoreVocabulary
import LarderValueFile

/// S3's conditional requests on an object, in the words of RFC 9110's
/// preconditions (`HTTPPreconditions`): on GetObject and HeadObject all
/// four headers; on PutObject `If-None-Match: *` (write only a new key)
/// and `If-Match` (write only over this version), checked by the store
/// atomically with the write.
enum ObjectConditions {
    /// The request's conditions; nil when it has none (the common case).
    static func of(_ head: HTTPRequestHead) -> HTTPPreconditions? { HTTPPreconditions.of(head) }

    /// The object as conditions see it: S3's ETag, and the value's own
    /// (what the plain API gave a client for the same version) too.
    static func current(_ meta: ValueMetadata) -> CurrentRepresentation {
        let s3 = meta.s3ETag
        return CurrentRepresentation(etags: s3 == meta.etag ? [s3] : [s3, meta.etag], lastModified: meta.modifiedSeconds)
    }

    /// A PutObject's `If-Match`/`If-None-Match` as the store's write
    /// condition: `412 PreconditionFailed` when it does not hold, and
    /// `404 NoSuchKey` for an `If-Match` on a key that holds nothing, as S3.
    static func writeCondition(_ head: HTTPRequestHead, key: StoreKey, bucket: String) -> WriteCondition? {
        guard let p = HTTPPreconditions.of(head, withDates: false) else { return nil }
        let ifMatch = head.headers["If-Match"] != nil
        return { meta in
            if meta == nil && ifMatch { throw S3Error.noSuchKey(BucketLayout.objectKey(key.description, bucket: bucket)) }
            if p.evaluate(current: meta.map(current), isReadMethod: false) != .proceed { throw S3Error.preconditionFailed }
        }
    }
}
