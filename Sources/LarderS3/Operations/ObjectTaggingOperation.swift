import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// GetObjectTagging, PutObjectTagging and DeleteObjectTagging
/// (`?tagging` on an object): the tags `ObjectTagging` keeps with it. A
/// change rewrites the object onto itself (`CopyObjectOperation.retag`).
struct ObjectTaggingOperation: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations
    let copyObject: CopyObjectOperation

    func get(_ key: StoreKey, bucket: String, objectKey: String, _ call: S3Call) {
        call.answer(metadata(key, bucket: bucket, objectKey: objectKey)) { result in
            ObjectTagging.of(try result.get().s3Attributes?.headers ?? []).xml().response()
        }
    }

    func put(_ key: StoreKey, bucket: String, objectKey: String, _ call: S3Call,
             _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let checks = try BodyChecks(call.head, payload: verified.payload)
        return .receive(SmallBodySink(call: call, verified: verified, checks: checks, limit: 64 << 10) { [self] body in
            do {
                let tags = try ObjectTagging(xml: body)
                change(key, bucket: bucket, objectKey: objectKey, to: tags, call) { HTTPResponse(status: .ok) }
            } catch {
                call.fail(S3Call.s3Error(error, logger: call.logger, context: "PutObjectTagging"))
            }
        })
    }

    func delete(_ key: StoreKey, bucket: String, objectKey: String, _ call: S3Call) {
        change(key, bucket: bucket, objectKey: objectKey, to: ObjectTagging(), call) { HTTPResponse(status: .noContent) }
    }

    /// Rewrites the object with `tags` once it is known to exist.
    private func change(_ key: StoreKey, bucket: String, objectKey: String, to tags: ObjectTagging, _ call: S3Call,
                        answer: @escaping @Sendable () -> HTTPResponse) {
        let copyObject = self.copyObject
        metadata(key, bucket: bucket, objectKey: objectKey).whenDone { result in
            if case .failure(let error) = result {
                call.fail(S3Call.s3Error(error, logger: call.logger, context: "tagging \(objectKey)"))
                return
            }
            copyObject.retag(key, bucket: bucket, objectKey: objectKey, tags: tags, call, answer: answer)
        }
    }

    /// The object's metadata; NoSuchKey, or NoSuchBucket when its bucket is missing too.
    private func metadata(_ key: StoreKey, bucket: String, objectKey: String) -> StoreReply<ValueMetadata> {
        let buckets = self.buckets
        return store.currentMetadata(of: key).then { result in
            guard case .success(.none) = result else { return .now(result.map { $0! }) }
            return buckets.exists(bucket).map { exists throws -> ValueMetadata in
                throw exists ? S3Error.noSuchKey(objectKey) : S3Error.noSuchBucket(bucket)
            }
        }
    }
}
