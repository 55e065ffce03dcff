import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile

/// PutObject, GetObject (with Range), HeadObject and DeleteObject over the
/// store's values. ETags are the Larder value's (`"<version hex>"`), the
/// same on both faces; S3's MD5 ETags kept with the value come later.
struct ObjectOperations: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations
    let maxObjectBytes: Int64

    // MARK: - PutObject

    func put(_ key: StoreKey, bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let headers = call.head.headers
        let encodings = (headers["Content-Encoding"] ?? "").split(separator: ",").map { $0.trimmingSpaces.lowercased() }
        let chunked = verified.payload.isAWSChunked || encodings.contains("aws-chunked")
        // The object's own encoding, once aws-chunked is taken off: kept as
        // the value's, for gzip (the store keeps gzip as it is).
        let encoding: ValueUpload.Encoding
        switch encodings.filter({ $0 != "aws-chunked" && !$0.isEmpty }).first {
        case nil, "identity": encoding = .identity
        case "gzip", "x-gzip": encoding = .gzip
        case let other?: throw S3Error.notImplemented("Content-Encoding '\(other)' is not supported yet; send the object as is")
        }
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
        var trailer: BodyChecks.ChecksumAlgorithm?
        if let named = headers["x-amz-trailer"]?.trimmingSpaces.lowercased(), named.hasPrefix("x-amz-checksum-") {
            trailer = BodyChecks.ChecksumAlgorithm(rawValue: String(named.dropFirst("x-amz-checksum-".count)))
        }
        let checks = BodyChecks(payload: verified.payload, checksumHeader: BodyChecks.checksumHeader { headers[$0] },
                                trailerChecksum: trailer)
        let exists = buckets.exists(bucket)
        // On the disk store the answer is here now: a missing bucket is
        // refused before the body (boto3 waits on `100 Continue`).
        if case .now(let answer) = exists, case .success(false) = answer { throw S3Error.noSuchBucket(bucket) }
        let writer: ValueWriter
        do {
            writer = try store.beginUpload(key: key, contentType: headers["Content-Type"] ?? "binary/octet-stream",
                                           encoding: encoding, expiresNanos: nil, condition: ObjectConditions.writeCondition(call.head))
            if let length {
                do { try writer.expect(bytes: length) } catch { writer.abort(); throw error }
            }
        } catch {
            throw S3Call.s3Error(error, logger: call.logger, context: "PUT \(key)")
        }
        return .receive(ObjectUploadSink(call: call, writer: writer, checks: checks,
                                         chunked: chunked ? AWSChunkedDecoder(for: verified, expectedBytes: length) : nil, bucket: bucket,
                                         bucketExists: exists))
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

extension StringProtocol {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
