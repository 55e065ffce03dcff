import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// Put/Get/DeleteBucketCors, Put/Get/DeleteBucketEncryption and
/// Put/Get/DeleteBucketTagging: a bucket's
/// settings (`BucketSettings`), kept in its marker's attributes. A change
/// rewrites the marker only if it is still the version read, so two
/// changes at once never lose one another: the later is answered
/// `409 OperationAborted`, as S3 answers conflicting configuration changes.
struct BucketSettingsOperations: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations

    /// The bucket's settings (none for a bucket made by writing a key under
    /// it); NoSuchBucket when there is no bucket.
    func settings(_ bucket: String) -> StoreReply<BucketSettings> {
        let buckets = self.buckets
        return store.currentMetadata(of: BucketLayout.marker(bucket)).then { marker in
            switch marker {
            case .failure(let error): return .now(.failure(error))
            case .success(let metadata?): return .now(.success(BucketSettings(decoding: metadata.attributes)))
            case .success(nil):
                return buckets.exists(bucket).map { exists throws -> BucketSettings in
                    guard exists else { throw S3Error.noSuchBucket(bucket) }
                    return BucketSettings()
                }
            }
        }
    }

    // MARK: - CORS

    func getCORS(_ bucket: String, _ call: S3Call) {
        call.answer(settings(bucket)) { result in
            guard let rules = try result.get().cors else {
                throw S3Error(.notFound, "NoSuchCORSConfiguration", "The CORS configuration does not exist")
            }
            return CORSRule.xml(rules).response()
        }
    }

    func putCORS(_ bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        try put(bucket, call, verified, answer: .ok) { body throws(S3Error) in
            let rules = try CORSRule.rules(xml: body)
            return { $0.cors = rules }
        }
    }

    func deleteCORS(_ bucket: String, _ call: S3Call) {
        update(bucket, call, answer: .noContent) { $0.cors = nil }
    }

    // MARK: - Tags

    func getTagging(_ bucket: String, _ call: S3Call) {
        call.answer(settings(bucket)) { result in
            guard let query = try result.get().tags else { throw S3Error(.notFound, "NoSuchTagSet", "The TagSet does not exist") }
            return try ObjectTagging(query: query).xml().response()
        }
    }

    func putTagging(_ bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        try put(bucket, call, verified, answer: .noContent) { body throws(S3Error) in
            let tags = try ObjectTagging(xml: body).query
            return { $0.tags = tags }
        }
    }

    func deleteTagging(_ bucket: String, _ call: S3Call) {
        update(bucket, call, answer: .noContent) { $0.tags = nil }
    }

    // MARK: - Default encryption

    func getEncryption(_ bucket: String, _ call: S3Call) {
        call.answer(settings(bucket)) { result in
            guard let encryption = try result.get().encryption else {
                throw S3Error(.notFound, "ServerSideEncryptionConfigurationNotFoundError",
                              "The server side encryption configuration was not found")
            }
            var xml = S3XML()
            xml.open("ServerSideEncryptionConfiguration", namespaced: true)
            xml.open("Rule")
            xml.open("ApplyServerSideEncryptionByDefault")
            xml.element("SSEAlgorithm", encryption.algorithm)
            if let key = encryption.kmsKeyID { xml.element("KMSMasterKeyID", key) }
            xml.close("ApplyServerSideEncryptionByDefault")
            xml.element("BucketKeyEnabled", encryption.bucketKeyEnabled == true ? "true" : "false")
            xml.close("Rule")
            xml.close("ServerSideEncryptionConfiguration")
            return xml.response()
        }
    }

    func putEncryption(_ bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        try put(bucket, call, verified, answer: .ok) { body throws(S3Error) in
            let encryption = try Self.encryption(xml: body)
            return { $0.encryption = encryption }
        }
    }

    func deleteEncryption(_ bucket: String, _ call: S3Call) {
        update(bucket, call, answer: .noContent) { $0.encryption = nil }
    }

    /// A `<ServerSideEncryptionConfiguration>`'s one rule.
    static func encryption(xml body: [UInt8]) throws(S3Error) -> BucketSettings.DefaultEncryption {
        let text = Substring(String(decoding: body, as: UTF8.self))
        guard text.contains("<ServerSideEncryptionConfiguration"), let rule = try S3XMLReader.elements("Rule", in: text).first,
              let algorithm = try S3XMLReader.values("SSEAlgorithm", in: rule).first else { throw DeleteRequest.malformed }
        guard ServerSideEncryption.algorithms.contains(algorithm) else {
            throw S3Error.invalidArgument("The encryption method specified is not supported: \(algorithm)")
        }
        let key = try S3XMLReader.values("KMSMasterKeyID", in: rule).first
        if key != nil, !algorithm.hasPrefix("aws:kms") {
            throw S3Error.invalidArgument("a KMSMasterKeyID is only valid with aws:kms encryption")
        }
        let bucketKey = try S3XMLReader.values("BucketKeyEnabled", in: rule).first.map { $0 == "true" }
        return BucketSettings.DefaultEncryption(algorithm: algorithm, kmsKeyID: key, bucketKeyEnabled: bucketKey)
    }

    // MARK: - The marker's rewrite

    /// A Put…: the configuration document (64 KiB at most) read, and the
    /// change `parse` makes of it (or its refusal) applied by `update`.
    private func put(_ bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified, answer: HTTPStatus,
                     _ parse: @escaping @Sendable ([UInt8]) throws(S3Error) -> @Sendable (inout BucketSettings) -> Void)
        throws(S3Error) -> HTTPBodyAction {
        .receive(SmallBodySink(call: call, verified: verified, checks: try BodyChecks(call.head, payload: verified.payload),
                               limit: 64 << 10) { [self] body in
            do throws(S3Error) {
                update(bucket, call, answer: answer, try parse(body))
            } catch {
                call.fail(error)
            }
        })
    }

    /// Rewrites the bucket's marker with `change` made to its settings,
    /// keeping the bucket's creation date, if the marker is still the
    /// version read; answers `answer`.
    private func update(_ bucket: String, _ call: S3Call, answer: HTTPStatus,
                        _ change: @escaping @Sendable (inout BucketSettings) -> Void) {
        let (store, buckets) = (self.store, self.buckets)
        let marker = BucketLayout.marker(bucket)
        let read: StoreReply<ValueMetadata?> = store.currentMetadata(of: marker).then { result in
            guard case .success(nil) = result else { return .now(result) }
            return buckets.exists(bucket).map { exists throws -> ValueMetadata? in
                guard exists else { throw S3Error.noSuchBucket(bucket) }
                return nil
            }
        }
        let written: StoreReply<PutOutcome> = read.then { result in
            do {
                let current = try result.get()
                var settings = BucketSettings(decoding: current?.attributes)
                settings.createdNanos = settings.createdNanos ?? current?.modifiedNanos ?? store.clock.nowNanos()
                change(&settings)
                let encoded = settings.encoded()
                guard encoded.count <= ValueMetadata.maxAttributeBytes else {
                    throw S3Error.invalidRequest(
                        "The bucket's configurations take \(encoded.count) bytes; Larder keeps at most \(ValueMetadata.maxAttributeBytes) with a bucket.")
                }
                let version = current?.version
                return try store.beginS3Write(marker, contentType: BucketOperations.markerContentType, condition: { now in
                    guard now?.version == version else { throw StoreError.preconditionFailed }
                }, attributes: encoded).finish()
            } catch {
                return .now(.failure(error))
            }
        }
        call.answer(written) { result in
            do {
                _ = try result.get()
            } catch StoreError.preconditionFailed {
                throw S3Error(.conflict, "OperationAborted",
                              "A conflicting conditional operation is currently in progress against this resource. Please try again.")
            }
            return HTTPResponse(status: answer)
        }
    }
}
