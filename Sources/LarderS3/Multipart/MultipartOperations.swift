import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// CreateMultipartUpload, UploadPart, AbortMultipartUpload, ListParts and
/// ListMultipartUploads, over the keys `MultipartLayout` names. A part
/// streams to disk as any PutObject does (`ObjectOperations.receive`);
/// CompleteMultipartUpload assembles them (`MultipartCompletion`).
struct MultipartOperations: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations
    let objects: ObjectOperations

    // MARK: - CreateMultipartUpload

    func create(bucket: String, objectKey: String, _ call: S3Call) throws(S3Error) {
        let headers = call.head.headers
        var kept = try ObjectAttributes.headers(of: { headers[$0] }, all: headers.map { (name: $0.name, value: $0.value) })
            + ServerSideEncryption.kept(headers) + ObjectTagging.kept(headers)
        if let encoding = headers["Content-Encoding"] {
            kept.removeAll { $0.name == "Content-Encoding" }
            let own = encoding.split(separator: ",").map { $0.trimmingSpaces }.filter { $0.lowercased() != "aws-chunked" && !$0.isEmpty }
            if !own.isEmpty { kept.append(("Content-Encoding", own.joined(separator: ", "))) }
        }
        let checksum = try UploadChecksum.requested(algorithm: headers["x-amz-checksum-algorithm"], type: headers["x-amz-checksum-type"])
        // The bucket's default encryption, for an upload that names none.
        let asksEncryption = !ServerSideEncryption.echoed(kept).isEmpty
        let id = MultipartLayout.newID()
        let store = self.store
        let contentType = headers["Content-Type"] ?? "binary/octet-stream"
        let encryption = Locked<[(String, String)]>([])
        let asked = kept
        let made: StoreReply<PutOutcome> = BucketSettingsOperations(store: store, buckets: buckets).settings(bucket).then { settings in
            guard case .success(let settings) = settings else { return .now(.failure(settings.failure!)) }
            var kept = asked
            if !asksEncryption { kept += settings.encryption?.kept ?? [] }
            let record = checksum?.record(headers: kept) ?? ObjectAttributes(headers: kept, checksum: nil)
            encryption.withLock { $0 = ServerSideEncryption.echoed(kept) }
            do {
                let writer = try store.beginS3Write(MultipartLayout.record(bucket, id), contentType: contentType, condition: nil,
                                                    attributes: record.encoded())
                do {
                    try Array(objectKey.utf8).withUnsafeBytes { try writer.write($0) }
                } catch {
                    writer.abort()
                    throw error
                }
                return writer.finish()
            } catch {
                return .now(.failure(error))
            }
        }
        call.answer(made) { result in
            _ = try result.get()
            var xml = S3XML()
            xml.open("InitiateMultipartUploadResult", namespaced: true)
            xml.element("Bucket", bucket)
            xml.element("Key", objectKey)
            xml.element("UploadId", id)
            xml.close("InitiateMultipartUploadResult")
            // Echoed as S3 echoes them, the type S3 chose when none was named.
            let echoed = checksum.map { [("x-amz-checksum-algorithm", $0.algorithm.rawValue.uppercased()),
                                         ("x-amz-checksum-type", $0.type.rawValue)] } ?? []
            return xml.response(headers: echoed + encryption.withLock { $0 })
        }
    }

    // MARK: - UploadPart

    func uploadPart(bucket: String, id: String, number: String?, _ call: S3Call,
                    _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let id = try MultipartLayout.checkID(id)
        let part = try Self.partNumber(number)
        let (store, record) = (self.store, MultipartLayout.record(bucket, id))
        // The part's checksum is the upload's (known from the headers, before the body).
        let sent = try BodyChecks(call.head, payload: .unsigned).checksumAlgorithm
        let headers = call.head.headers
        // The upload's encryption, learnt with its record: the part's answer names it.
        let encryption = Locked<[(String, String)]>([])
        let ready: @Sendable () -> StoreReply<Bool> = {
            store.currentMetadata(of: record).map { meta throws -> Bool in
                guard let meta else { return false }
                try UploadChecksum(record: meta.s3Attributes)?.check(part: sent)
                let upload = meta.s3Attributes?.headers ?? []
                try ServerSideEncryption.checkPart(headers, upload: upload)
                encryption.withLock { $0 = ServerSideEncryption.echoed(upload) }
                return true
            }
        }
        return try objects.receive(into: MultipartLayout.part(bucket, id, part), contentType: "application/octet-stream",
                                   kept: [], condition: nil, call, verified, ready: ready, missing: .noSuchUpload(id),
                                   answer: { attributes in
                                       var response = ObjectUploadSink.uploadAnswer(attributes)
                                       response.headers += encryption.withLock { $0 }
                                       return response
                                   })
    }

    static func partNumber(_ text: String?) throws(S3Error) -> Int {
        guard let text, let n = Int(text), MultipartLayout.partNumbers.contains(n) else {
            throw S3Error.invalidArgument("Part number must be an integer between 1 and 10000, inclusive")
        }
        return n
    }

    // MARK: - AbortMultipartUpload

    func abort(bucket: String, id: String, _ call: S3Call) throws(S3Error) {
        let id = try MultipartLayout.checkID(id)
        let store = self.store
        let aborted: StoreReply<Bool> = store.delete(MultipartLayout.record(bucket, id), condition: nil).then { existed in
            guard case .success(true) = existed else { return .now(existed) }
            return store.deletePrefix(MultipartLayout.parts(bucket, id)).map { _ in true }
        }
        call.answer(aborted) { result in
            guard try result.get() else { throw S3Error.noSuchUpload(id) }
            return HTTPResponse(status: .noContent)
        }
    }

    // MARK: - ListParts

    func listParts(bucket: String, objectKey: String, id: String, _ query: S3Query, _ call: S3Call) throws(S3Error) {
        let id = try MultipartLayout.checkID(id)
        let maxParts = max(1, min(1000, Int(query["max-parts"] ?? "") ?? 1000))
        let marker = Int(query["part-number-marker"] ?? "") ?? 0
        guard (0...MultipartLayout.partNumbers.upperBound).contains(marker) else {
            throw S3Error.invalidArgument("part-number-marker must be an integer between 0 and 10000")
        }
        let store = self.store
        let after = marker > 0 ? MultipartLayout.part(bucket, id, marker).string : nil
        let listed: StoreReply<(StoreListing, UploadChecksum?)> = store.currentMetadata(of: MultipartLayout.record(bucket, id))
            .then { record in
                guard case .success(.some(let meta)) = record else {
                    return .now(.failure((try? record.get()) == nil ? S3Error.noSuchUpload(id) : record.failure!))
                }
                let checksum = UploadChecksum(record: meta.s3Attributes)
                return store.list(prefix: MultipartLayout.parts(bucket, id), after: after, limit: maxParts, groupByDirectory: false)
                    .map { ($0, checksum) }
            }
        call.answer(listed) { result in
            let (page, checksum) = try result.get()
            var xml = S3XML()
            xml.open("ListPartsResult", namespaced: true)
            xml.element("Bucket", bucket)
            xml.element("Key", objectKey)
            xml.element("UploadId", id)
            xml.element("PartNumberMarker", String(marker))
            let last = page.values.last.flatMap { MultipartLayout.number(ofPartKey: $0.key) }
            if let last { xml.element("NextPartNumberMarker", String(last)) }
            xml.element("MaxParts", String(maxParts))
            xml.element("IsTruncated", page.next == nil ? "false" : "true")
            xml.element("StorageClass", "STANDARD")
            if let checksum {
                xml.element("ChecksumAlgorithm", checksum.algorithm.rawValue.uppercased())
                xml.element("ChecksumType", checksum.type.rawValue)
            }
            for part in page.values {
                guard let number = MultipartLayout.number(ofPartKey: part.key) else { continue }
                xml.open("Part")
                xml.element("PartNumber", String(number))
                xml.element("LastModified", S3Time.iso8601(nanos: part.metadata.modifiedNanos))
                xml.element("ETag", part.metadata.s3ETag)
                xml.element("Size", String(part.metadata.size))
                if let attributes = part.metadata.s3Attributes, let sum = attributes.checksum, let text = attributes.checksumText {
                    xml.element("Checksum" + sum.algorithm.rawValue.uppercased(), text)
                }
                xml.close("Part")
            }
            xml.close("ListPartsResult")
            return xml.response()
        }
    }

    // MARK: - ListMultipartUploads

    /// The bucket's uploads in progress (at most 1,000, in id order), each
    /// read for its object key; `prefix` filters on the key.
    func listUploads(bucket: String, _ query: S3Query, _ call: S3Call) {
        let store = self.store, buckets = self.buckets
        let prefix = query["prefix"] ?? ""
        let listed: StoreReply<[ListedUpload]> = buckets.exists(bucket).then { exists in
            guard case .success(true) = exists else {
                return .now(.failure((try? exists.get()) == false ? S3Error.noSuchBucket(bucket) : exists.failure!))
            }
            return store.list(prefix: MultipartLayout.records(bucket), after: nil, limit: 1000, groupByDirectory: false).then { page in
                guard case .success(let page) = page else { return .now(.failure(page.failure!)) }
                return Self.readKeys(page.values, from: 0, store: store, into: [])
            }
        }
        call.answer(listed) { result in
            let uploads = try result.get().filter { $0.key.hasPrefix(prefix) }.sorted { ($0.key, $0.id) < ($1.key, $1.id) }
            var xml = S3XML()
            xml.open("ListMultipartUploadsResult", namespaced: true)
            xml.element("Bucket", bucket)
            xml.element("KeyMarker", "")
            xml.element("UploadIdMarker", "")
            if !prefix.isEmpty { xml.element("Prefix", prefix) }
            xml.element("MaxUploads", "1000")
            xml.element("IsTruncated", "false")
            for upload in uploads {
                xml.open("Upload")
                xml.element("Key", upload.key)
                xml.element("UploadId", upload.id)
                xml.element("StorageClass", "STANDARD")
                xml.element("Initiated", S3Time.iso8601(nanos: upload.initiated))
                if let checksum = upload.checksum {
                    xml.element("ChecksumAlgorithm", checksum.algorithm.rawValue.uppercased())
                    xml.element("ChecksumType", checksum.type.rawValue)
                }
                xml.close("Upload")
            }
            xml.close("ListMultipartUploadsResult")
            return xml.response()
        }
    }

    /// An upload in progress as ListMultipartUploads shows it.
    struct ListedUpload: Sendable {
        let key: String
        let id: String
        let initiated: Int64
        let checksum: UploadChecksum?
    }

    private static func readKeys(_ records: [ListedValue], from index: Int, store: any ValueStore,
                                 into found: [ListedUpload]) -> StoreReply<[ListedUpload]> {
        guard index < records.count else { return .now(.success(found)) }
        let record = records[index]
        let id = String(record.key.split(separator: "/").last ?? "")
        return store.open(try! StoreKey(record.key)).then { opened in
            var found = found
            if case .success(let value) = opened {
                defer { value.close() }
                if let bytes = try? value.readAll() {
                    found.append(ListedUpload(key: String(decoding: bytes, as: UTF8.self), id: id, initiated: record.metadata.modifiedNanos,
                                              checksum: UploadChecksum(record: record.metadata.s3Attributes)))
                }
            }
            return readKeys(records, from: index + 1, store: store, into: found)
        }
    }
}

extension Result {
    /// The error of a failed result (for passing one on as it is).
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
