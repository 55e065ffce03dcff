import Crypto
import FoundationEssentials
import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// CopyObject (`PUT` with `x-amz-copy-source`): the source's bytes streamed
/// into a new write of the destination, never whole in memory, with their
/// MD5 computed on the way (the copy's ETag). The source's Content-Type
/// and headers are copied (`x-amz-metadata-directive: COPY`, the default)
/// or the request's taken (`REPLACE`). The copy's checksum is computed over
/// the bytes as they pass, in the source's algorithm or the one
/// `x-amz-checksum-algorithm` names: as on S3, a copy's checksum is always
/// the whole object's, so a multipart source's composite checksum becomes
/// a full-object one. `x-amz-copy-source-if-*` are checked against the
/// source, `If-Match`/`If-None-Match` against the destination, as on S3.
/// UploadPartCopy is the same copy into a part of a multipart upload, of
/// the whole source or of `x-amz-copy-source-range`, with the checksum the
/// upload was created with.
struct CopyObjectOperation: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations
    /// Bytes moved per read of the source.
    static let pieceBytes = 256 * 1024

    struct Source {
        let bucket: String
        let objectKey: String
        let key: StoreKey
    }

    /// `x-amz-copy-source`: `bucket/key` or `/bucket/key`, URL-encoded, with
    /// an optional `?versionId=` (only `null`: Larder keeps no versions).
    static func source(_ header: String) throws(S3Error) -> Source {
        var text = Substring(header)
        if let q = text.firstIndex(of: "?") {
            let query = S3Query(text[text.index(after: q)...])
            if let version = query["versionId"], version != "null" {
                throw S3Error.notImplemented("versions are not kept by Larder's S3 face (x-amz-copy-source versionId \(version))")
            }
            text = text[..<q]
        }
        let decoded = AWSURIEncoding.decode(text.hasPrefix("/") ? text.dropFirst() : text)
        guard let slash = decoded.firstIndex(of: 0x2F), slash > 0, slash < decoded.count - 1 else {
            throw S3Error.invalidArgument("Invalid copy source object key: x-amz-copy-source must be bucket/key")
        }
        let bucket = String(decoding: decoded[..<slash], as: UTF8.self)
        guard !bucket.hasPrefix("."), (try? StoreKey(bucket)) != nil else { throw S3Error.noSuchBucket(bucket) }
        let objectKey = Array(decoded[(slash + 1)...])
        return Source(bucket: bucket, objectKey: String(decoding: objectKey, as: UTF8.self),
                      key: try BucketLayout.key(bucket: bucket, objectKey: objectKey))
    }

    func copy(to key: StoreKey, bucket: String, _ call: S3Call) throws(S3Error) {
        let headers = call.head.headers
        let source = try Self.source(headers["x-amz-copy-source"] ?? "")
        let replace: Bool
        switch headers["x-amz-metadata-directive"]?.uppercased() {
        case nil, "COPY": replace = false
        case "REPLACE": replace = true
        case let other?: throw S3Error.invalidArgument("Unknown metadata directive: \(other)")
        }
        if source.key == key && !replace {
            throw S3Error.invalidRequest("This copy request is illegal because it is trying to copy an object to itself "
                                         + "without changing the object's metadata, storage class, website redirect location "
                                         + "or encryption attributes.")
        }
        let replacement: (headers: [(name: String, value: String)], contentType: String?)? = replace
            ? (try ObjectAttributes.headers(of: { headers[$0] }, all: headers.map { (name: $0.name, value: $0.value) }),
               headers["Content-Type"])
            : nil
        var algorithm: ChecksumAlgorithm?
        if let named = headers["x-amz-checksum-algorithm"] {
            guard let known = ChecksumAlgorithm(name: named) else {
                throw S3Error.invalidRequest("Checksum algorithm provided is unsupported. Please try again with any of the valid types: "
                                             + "[CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
            }
            algorithm = known
        }
        let named = algorithm
        let encryption = try ServerSideEncryption.kept(headers)
        let tagging: [(name: String, value: String)]?
        switch headers["x-amz-tagging-directive"]?.uppercased() {
        case nil, "COPY": tagging = nil
        case "REPLACE": tagging = try ObjectTagging.kept(headers)
        case let other?: throw S3Error.invalidArgument("Unknown tagging directive: \(other)")
        }
        let ready = buckets.exists(bucket).map { (exists: $0, checksum: named, encryption: [(name: String, value: String)]?.none) }
        let copied = copying(source, to: key, call, ready: ready, missing: .noSuchBucket(bucket),
                             replacement: replacement, encryption: encryption, tagging: tagging, range: nil,
                             writeCondition: ObjectConditions.writeCondition(call.head, key: key, bucket: bucket))
        call.answer(copied) { result in
            let (outcome, attributes) = try result.get()
            return Self.result("CopyObjectResult", outcome, attributes)
        }
    }

    /// UploadPartCopy: `x-amz-copy-source` (whole, or the bytes
    /// `x-amz-copy-source-range: bytes=first-last` names) into part `part`
    /// of upload `id`.
    func copyPart(bucket: String, id: String, number: String?, _ call: S3Call) throws(S3Error) {
        let id = try MultipartLayout.checkID(id)
        let part = try MultipartOperations.partNumber(number)
        let source = try Self.source(call.head.headers["x-amz-copy-source"] ?? "")
        var range: (first: Int64, last: Int64)?
        if let text = call.head.headers["x-amz-copy-source-range"] {
            let bounds = text.hasPrefix("bytes=") ? text.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false) : []
            guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, first <= last else {
                throw S3Error.invalidArgument("The x-amz-copy-source-range value must be of the form bytes=first-last where first and last "
                                              + "are the zero-based offsets of the first and last bytes to copy")
            }
            range = (first, last)
        }
        // A part of an SSE-C upload is sent with the upload's key, and
        // answered with the upload's encryption, as S3 does.
        let headers = call.head.headers
        let ready = store.currentMetadata(of: MultipartLayout.record(bucket, id)).map { meta throws in
            let upload = meta?.s3Attributes?.headers ?? []
            if meta != nil { try ServerSideEncryption.checkPart(headers, upload: upload) }
            return (exists: meta != nil, checksum: UploadChecksum(record: meta?.s3Attributes)?.algorithm,
                    encryption: Optional(upload.filter { ServerSideEncryption.keptNames.contains($0.name) }))
        }
        let copied = copying(source, to: MultipartLayout.part(bucket, id, part), call, ready: ready, missing: .noSuchUpload(id),
                             replacement: ([], "application/octet-stream"), encryption: [], tagging: [], range: range, writeCondition: nil)
        call.answer(copied) { result in
            let (outcome, attributes) = try result.get()
            return Self.result("CopyPartResult", outcome, attributes)
        }
    }

    /// PutObjectTagging, DeleteObjectTagging: the object rewritten onto
    /// itself with `tags` (none: untagged) in place of its own, its bytes,
    /// ETag, checksum and encryption as they were (the store keeps an
    /// object's attributes with its bytes, so new ones are a new write).
    func retag(_ key: StoreKey, bucket: String, objectKey: String, tags: ObjectTagging, _ call: S3Call,
               answer: @escaping @Sendable () -> HTTPResponse) {
        let source = Source(bucket: bucket, objectKey: objectKey, key: key)
        let kept = tags.tags.isEmpty ? [] : [(name: ObjectTagging.header, value: tags.query)]
        let rewritten = copying(source, to: key, call, ready: .now(.success((exists: true, checksum: nil, encryption: nil))), missing: .noSuchBucket(bucket),
                                replacement: nil, encryption: nil, tagging: kept, range: nil, writeCondition: nil, keepDigests: true)
        call.answer(rewritten) { result in
            _ = try result.get()
            return answer()
        }
    }

    static func result(_ name: String, _ outcome: PutOutcome, _ attributes: ObjectAttributes) -> HTTPResponse {
        var xml = S3XML()
        xml.open(name, namespaced: true)
        xml.element("LastModified", S3Time.iso8601(nanos: outcome.metadata.modifiedNanos))
        xml.element("ETag", attributes.etag)
        if let checksum = attributes.checksum, let text = attributes.checksumText {
            xml.element("Checksum" + checksum.algorithm.rawValue.uppercased(), text)
            if name == "CopyObjectResult" { xml.element("ChecksumType", attributes.checksumType.rawValue) }
        }
        xml.close(name)
        return xml.response(headers: ServerSideEncryption.echoed(attributes.headers))
    }

    /// Opens the source (NoSuchKey, NoSuchBucket), waits for `ready`
    /// (`missing` when it answers no; the checksum the copy is to have, if
    /// the destination names one), then copies.
    private func copying(_ source: Source, to key: StoreKey, _ call: S3Call,
                         ready: StoreReply<(exists: Bool, checksum: ChecksumAlgorithm?, encryption: [(name: String, value: String)]?)>,
                         missing: S3Error,
                         replacement: (headers: [(name: String, value: String)], contentType: String?)?,
                         encryption: [(name: String, value: String)]?, tagging: [(name: String, value: String)]?,
                         range: (first: Int64, last: Int64)?, writeCondition: WriteCondition?,
                         keepDigests: Bool = false) -> StoreReply<(PutOutcome, ObjectAttributes)> {
        let conditions = Self.sourceConditions(call.head)
        let store = self.store, buckets = self.buckets
        return store.open(source.key).then { opened in
            guard case .success(let value) = opened else {
                guard case .failure(StoreError.notFound) = opened else { return .now(.failure(opened.failure!)) }
                return buckets.exists(source.bucket).map { exists throws -> (PutOutcome, ObjectAttributes) in
                    throw exists ? S3Error.noSuchKey(source.objectKey) : S3Error.noSuchBucket(source.bucket)
                }
            }
            return ready.then { ready in
                do {
                    let destination = try ready.get()
                    guard destination.exists else { throw missing }
                    return try Self.copy(value, to: key, store: store, conditions: conditions, request: call.head.headers,
                                         replacement: replacement, encryption: destination.encryption ?? encryption, tagging: tagging, range: range,
                                         checksum: destination.checksum, writeCondition: writeCondition, keepDigests: keepDigests)
                } catch {
                    value.close()
                    return .now(.failure(error))
                }
            }
        }
    }

    /// Streams `value` into a write of `key`, with a checksum in
    /// `checksum`'s algorithm, else the source's (of a whole source: a
    /// range has none), and the encryption the request asks for (an SSE-C
    /// source is read only with its key, `x-amz-copy-source-…-customer-key`;
    /// nil: the source's), and the tags it names (nil: the source's). With
    /// `keepDigests` the object is rewritten onto itself: its ETag, parts and
    /// checksum stay, and an SSE-C one needs no key. Closes `value`.
    private static func copy(_ value: StoredValue, to key: StoreKey, store: any ValueStore, conditions: HTTPPreconditions?,
                             request: HTTPHeaders, replacement: (headers: [(name: String, value: String)], contentType: String?)?,
                             encryption: [(name: String, value: String)]?, tagging: [(name: String, value: String)]?,
                             range: (first: Int64, last: Int64)?, checksum: ChecksumAlgorithm?,
                             writeCondition: WriteCondition?, keepDigests: Bool) throws -> StoreReply<(PutOutcome, ObjectAttributes)> {
        defer { value.close() }
        let meta = value.metadata
        if let conditions, conditions.evaluate(current: ObjectConditions.current(meta), isReadMethod: true) != .proceed {
            // S3 answers 412 for every copy-source condition that fails, a none-match too.
            throw S3Error.preconditionFailed
        }
        let size = Int64(meta.size)
        if let range, range.last >= size {
            throw S3Error(.badRequest, "InvalidRange", "Range specified is not valid for source object of size: \(size)")
        }
        let (skip, count) = range.map { ($0.first, $0.last - $0.first + 1) } ?? (0, size)
        let kept = meta.s3Attributes
        if !keepDigests {
            try ServerSideEncryption.checkRead(request, kept: kept?.headers ?? [], prefix: ServerSideEncryption.copySourcePrefix)
        }
        // The source's tags unless the request names its own (`tagging`).
        let sourceTags = (kept?.headers ?? []).filter { $0.name == ObjectTagging.header }
        let headers = (replacement?.headers ?? kept?.headers ?? [])
            .filter { !ServerSideEncryption.keptNames.contains($0.name) && $0.name != ObjectTagging.header }
            + (tagging ?? sourceTags)
        let sourceEncryption = (kept?.headers ?? []).filter { ServerSideEncryption.keptNames.contains($0.name) }
        // Rewritten onto itself: the digests stay (a plain API value has none to keep).
        let digests = keepDigests ? kept : nil
        var running = digests == nil ? (checksum ?? (range == nil ? kept?.checksum?.algorithm : nil)).map(RunningChecksum.init) : nil
        var attributes = digests ?? ObjectAttributes(headers: [], checksum: running?.algorithm)
        attributes.headers = headers + (encryption ?? sourceEncryption)
        let contentType = replacement.map { $0.contentType ?? "binary/octet-stream" } ?? meta.contentType
        let writer = try store.beginUpload(key: key, contentType: contentType, encoding: .identity, expiresNanos: nil,
                                           condition: writeCondition)
        do {
            try writer.setAttributes(attributes.encoded())
            try writer.expect(bytes: count)
            let stream = try value.identityStream()
            defer { stream.close() }
            try stream.skip(skip)
            var md5 = Insecure.MD5()
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceBytes, alignment: 16)
            defer { buffer.deallocate() }
            var left = count
            while left > 0 {
                let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(left, Int64(pieceBytes)))]))
                if n == 0 { throw StoreError.corrupt(path: meta.key, reason: "the value ended before its size") }
                let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                md5.update(bufferPointer: piece)
                running?.update(piece)
                try writer.write(piece)
                left -= Int64(n)
            }
            if digests == nil { attributes.md5 = Array(md5.finalize()) }
            if let running { attributes.checksum = (running.algorithm, running.finalize()) }
            try writer.setAttributes(attributes.encoded())
        } catch {
            writer.abort()
            throw error
        }
        let made = attributes
        return writer.finish().map { ($0, made) }
    }

    /// `x-amz-copy-source-if-*`, in the words of RFC 9110's preconditions.
    static func sourceConditions(_ head: HTTPRequestHead) -> HTTPPreconditions? {
        guard head.headers.containsName(startingWith: "x-amz-copy-source-if-") else { return nil }
        let p = HTTPPreconditions(ifMatch: head.headers.values("x-amz-copy-source-if-match"),
                                  ifNoneMatch: head.headers.values("x-amz-copy-source-if-none-match"),
                                  ifModifiedSince: head.headers["x-amz-copy-source-if-modified-since"],
                                  ifUnmodifiedSince: head.headers["x-amz-copy-source-if-unmodified-since"])
        return p.isEmpty ? nil : p
    }
}

extension Array where Element == UInt8 {
    var base64: String { Data(self).base64EncodedString() }
}
