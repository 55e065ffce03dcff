import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// PutObject, GetObject (with Range), HeadObject and DeleteObject over the
/// store's values. An object written here keeps S3's MD5 ETag, its
/// checksum and headers in the value's attributes (`ObjectAttributes`); a
/// value written through the plain API answers with its own ETag.
struct ObjectOperations: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations
    let maxObjectBytes: Int64

    // MARK: - PutObject

    func put(_ key: StoreKey, bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let headers = call.head.headers
        let encryption = try ServerSideEncryption.kept(headers)
        let known = try bucketDefaults(bucket, asked: encryption)
        let kept = try ObjectAttributes.headers(of: { headers[$0] }, all: headers.map { (name: $0.name, value: $0.value) })
            + encryption + known.encryption + ObjectTagging.kept(headers)
        return try receive(into: key, contentType: headers["Content-Type"] ?? "binary/octet-stream", kept: kept,
                           condition: ObjectConditions.writeCondition(call.head, key: key, bucket: bucket), call, verified,
                           ready: { [buckets] in buckets.exists(bucket) }, missing: .noSuchBucket(bucket),
                           bucketExists: known.exists)
    }

    /// What a write into `bucket` learns of it before its body, when the
    /// store answers at once (the disk store): that it exists (else
    /// NoSuchBucket, now), and the encryption headers its default
    /// encryption adds to a write that `asked` for none. A store that
    /// answers later (PostgreSQL) learns neither now: the bucket is asked
    /// about as the body starts and ends, and no default is added.
    func bucketDefaults(_ bucket: String, asked: [(name: String, value: String)])
        throws(S3Error) -> (exists: Bool, encryption: [(name: String, value: String)]) {
        switch BucketSettingsOperations(store: store, buckets: buckets).settings(bucket) {
        case .now(.success(let settings)): return (true, asked.isEmpty ? settings.encryption?.kept ?? [] : [])
        case .now(.failure(let error as S3Error)): throw error
        default: return (false, [])
        }
    }

    /// Streams a request's body into a write of `key` (PutObject, UploadPart):
    /// the aws-chunked framing taken off, the body checked as it passes,
    /// its MD5 and checksum kept with `kept` headers in the value's
    /// attributes. Published only if `ready` answers true (the bucket, the
    /// upload exists), asked as the body starts and again once it is in,
    /// else refused with `missing`.
    func receive(into key: StoreKey, contentType: String, kept: [(name: String, value: String)], condition: WriteCondition?,
                 _ call: S3Call, _ verified: SigV4Authenticator.Verified, ready: @escaping @Sendable () -> StoreReply<Bool>,
                 missing: S3Error, bucketExists: Bool = false,
                 answer: @escaping @Sendable (ObjectAttributes) -> HTTPResponse = ObjectUploadSink.uploadAnswer)
        throws(S3Error) -> HTTPBodyAction {
        let headers = call.head.headers
        let encodings = (headers["Content-Encoding"] ?? "").split(separator: ",").map { $0.trimmingSpaces }
        // `aws-chunked` named on a body that is not framed so (no decoded
        // length, no streaming hash: an empty PUT that names it) is taken off and ignored.
        let chunked = verified.payload.isAWSChunked
            || (encodings.contains { $0.lowercased() == "aws-chunked" } && headers["x-amz-decoded-content-length"] != nil)
        let length: Int64?
        if chunked {
            guard let decoded = headers["x-amz-decoded-content-length"].flatMap({ Int64($0) }) else {
                throw S3Error(HTTPStatus.lengthRequired, "MissingContentLength",
                              "an aws-chunked upload needs x-amz-decoded-content-length")
            }
            length = decoded
        } else {
            length = call.head.contentLength ?? (call.head.isChunked ? nil : 0)
        }
        if let length, length > maxObjectBytes { throw S3Error.entityTooLarge(limit: maxObjectBytes) }
        return .receive(try upload(into: key, contentType: contentType, kept: Self.keeping(kept, encodings: encodings),
                                   checks: try BodyChecks(call.head, payload: verified.payload), length: length,
                                   condition: condition, call,
                                   chunked: chunked ? AWSChunkedDecoder(for: verified, expectedBytes: length) : nil,
                                   ready: ready, missing: missing, readyKnown: bucketExists, answer: answer))
    }

    /// The sink that streams an object's bytes into a write of `key`, kept
    /// with `kept` headers and checked by `checks`; published only if `ready`
    /// (asked now, unless `readyKnown` says the caller knows, and once the
    /// bytes are in), else refused with `missing`.
    func upload(into key: StoreKey, contentType: String, kept: [(name: String, value: String)], checks: BodyChecks,
                length: Int64?, condition: WriteCondition?, _ call: S3Call, chunked: AWSChunkedDecoder? = nil,
                ready: @escaping @Sendable () -> StoreReply<Bool>, missing: S3Error, readyKnown: Bool = false,
                answer: @escaping @Sendable (ObjectAttributes) -> HTTPResponse = ObjectUploadSink.uploadAnswer)
        throws(S3Error) -> ObjectUploadSink {
        let attributes = ObjectAttributes(headers: kept, checksum: checks.checksumAlgorithm)
        // On the disk store the answer is here now: a missing bucket (or
        // a part's wrong checksum) is refused before the body (boto3 waits
        // on `100 Continue`).
        switch readyKnown ? .now(.success(true)) : ready() {
        case .now(.success(false)): throw missing
        case .now(.failure(let error as S3Error)): throw error
        default: break
        }
        let writer: ValueWriter
        do {
            writer = try store.beginS3Write(key, contentType: contentType, condition: condition, attributes: attributes.encoded(),
                                            length: length)
        } catch {
            throw S3Call.s3Error(error, logger: call.logger, context: "PUT \(key)")
        }
        return ObjectUploadSink(call: call, writer: writer, checks: checks, attributes: attributes, chunked: chunked,
                                ready: ready, missing: missing, answer: answer)
    }

    /// The headers kept with an object: `kept`, and its own
    /// Content-Encoding (aws-chunked taken off), given back as S3 does;
    /// its bytes are stored as sent (a gzip object reads back as the same
    /// gzip bytes).
    static func keeping(_ kept: [(name: String, value: String)], encodings: [String]) -> [(name: String, value: String)] {
        var headers = kept.filter { $0.name != "Content-Encoding" }
        let encoding = encodings.filter { $0.lowercased() != "aws-chunked" && !$0.isEmpty }.joined(separator: ", ")
        if !encoding.isEmpty { headers.append(("Content-Encoding", encoding)) }
        return headers
    }

    // MARK: - GetObject, HeadObject

    func get(_ key: StoreKey, bucket: String, objectKey: String, _ call: S3Call) {
        let buckets = self.buckets
        let opened: StoreReply<StoredValue> = store.open(key).then { result in
            // A missing object in a missing bucket is NoSuchBucket, as on S3.
            guard case .failure(StoreError.notFound) = result else { return .now(result) }
            return buckets.exists(bucket).map { exists throws -> StoredValue in
                throw exists ? S3Error.noSuchKey(objectKey) : S3Error.noSuchBucket(bucket)
            }
        }
        call.answer(opened) { result in try ObjectRepresentation.response(try result.get(), call.head) }
    }

    // MARK: - DeleteObject

    /// 204 whether or not the key existed, as S3 answers; NoSuchBucket when
    /// the bucket is gone too.
    func delete(_ key: StoreKey, bucket: String, _ call: S3Call) {
        let buckets = self.buckets
        let deleted: StoreReply<Bool> = store.delete(key, condition: nil).then { result in
            guard case .success(false) = result else { return .now(result) }
            return buckets.exists(bucket)
        }
        call.answer(deleted) { existed in
            guard try existed.get() else { throw S3Error.noSuchBucket(bucket) }
            return HTTPResponse(status: .noContent)
        }
    }
}
