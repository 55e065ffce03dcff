import Crypto
import Dispatch
import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// CompleteMultipartUpload: the parts the request names, checked against
/// those uploaded (each there with that ETag, in ascending order, all but
/// the last at least 5 MiB), streamed one after another into one write of
/// the object, never a whole part in memory. The object's ETag is S3's:
/// the MD5 of the parts' MD5s, then `-<parts>`. Its checksum is the one
/// the upload was created with (`UploadChecksum`): the digest of the parts'
/// digests (composite), or the checksum of the bytes computed as they
/// stream (full-object), checked against the request's
/// `x-amz-checksum-<algorithm>` when it sends one. Once it is published
/// the upload's record and parts are deleted.
struct MultipartCompletion: Sendable {
    let store: any ValueStore
    let maxObjectBytes: Int64
    /// Bytes moved per read of a part.
    static let pieceBytes = 256 * 1024

    func complete(_ key: StoreKey, bucket: String, objectKey: String, id: String, _ call: S3Call,
                  _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let id = try MultipartLayout.checkID(id)
        // An `x-amz-checksum-*` header here is the object's checksum, not the XML's.
        let checks = try BodyChecks(payload: verified.payload, checksumHeader: nil, trailerChecksum: nil,
                                    contentMD5: call.head.headers["Content-MD5"])
        let sent = try BodyChecks.checksumHeader { call.head.headers[$0] }
        let sentType = call.head.headers["x-amz-checksum-type"]
        let (store, maxObjectBytes) = (self.store, self.maxObjectBytes)
        let condition = ObjectConditions.writeCondition(call.head, key: key, bucket: bucket)
        return .receive(SmallBodySink(call: call, verified: verified, checks: checks, limit: 1 << 20) { body in
            let requested: [RequestedPart]
            do throws(S3Error) { requested = try Self.parts(xml: body) } catch { call.fail(error); return }
            let record = MultipartLayout.record(bucket, id)
            let done: StoreReply<ObjectAttributes> = store.open(record).then { opened -> StoreReply<ObjectAttributes> in
                guard case .success(let value) = opened else {
                    guard case .failure(StoreError.notFound) = opened else { return .now(.failure(opened.failure!)) }
                    return Self.alreadyCompleted(key, requested: requested, id: id, store: store)
                }
                let meta = value.metadata
                value.close()
                // An SSE-C upload is completed with its key, as S3 asks.
                do throws(S3Error) {
                    try ServerSideEncryption.checkPart(call.head.headers, upload: meta.s3Attributes?.headers ?? [])
                } catch {
                    return .now(.failure(error))
                }
                return store.list(prefix: MultipartLayout.parts(bucket, id), after: nil, limit: MultipartLayout.partNumbers.count,
                                  groupByDirectory: false).then { listing -> StoreReply<ObjectAttributes> in
                    do {
                        let uploaded = try listing.get().values
                        let checksum = UploadChecksum(record: meta.s3Attributes)
                        let chosen = try Self.check(requested, against: uploaded, checksum: checksum, maxObjectBytes: maxObjectBytes)
                        let attributes = try Self.attributes(of: chosen, headers: meta.s3Attributes?.headers ?? [], checksum: checksum,
                                                             sent: sent, sentType: sentType)
                        let writer = try store.beginS3Write(key, contentType: meta.contentType, condition: condition,
                                                            attributes: attributes.encoded(),
                                                            length: Int64(chosen.reduce(0) { $0 + $1.metadata.size }))
                        // A full-object checksum is the bytes': computed as they stream in.
                        let running = RunningBox(checksum?.type == .fullObject ? checksum.map { RunningChecksum($0.algorithm) } : nil)
                        let box = WriterBox(writer)
                        return Self.append(chosen, from: 0, to: box, running: running, store: store)
                            .then { appended -> StoreReply<ObjectAttributes> in
                                var made = attributes
                                do {
                                    try appended.get()
                                    if let whole = running.checksum {
                                        made.checksum = (whole.algorithm, whole.finalize())
                                        if let sent, sent.1 != made.checksumText {
                                            throw S3Error(.badRequest, "BadDigest", "The \(sent.0.rawValue.uppercased()) you specified "
                                                          + "did not match the calculated checksum.")
                                        }
                                        try box.writer.setAttributes(made.encoded())
                                    }
                                } catch {
                                    box.writer.abort()
                                    return .now(.failure(error))
                                }
                                let published = made
                                return box.writer.finish().map { _ in published }
                            }
                    } catch {
                        return .now(.failure(error))
                    }
                }
            }.then { completed -> StoreReply<ObjectAttributes> in
                guard case .success(let attributes) = completed else { return .now(completed) }
                // The object is published: the upload goes (a failure here
                // leaves parts a reset or an Abort removes; the answer
                // stands). Not on this thread: a publish may answer on the
                // disk store's flush thread, and a delete waits for that
                // thread's next flush.
                return .later { pending in
                    DispatchQueue.global().async {
                        store.deletePrefix(MultipartLayout.parts(bucket, id))
                            .then { _ in store.delete(record, condition: nil) }
                            .whenDone { _ in pending.fulfil(.success(attributes)) }
                    }
                }
            }
            call.answer(done) { result in
                let attributes = try result.get()
                var xml = S3XML()
                xml.open("CompleteMultipartUploadResult", namespaced: true)
                // An absolute URL, as S3's: the object's, on the host the request named.
                xml.element("Location", "http://" + (call.head.headers["Host"] ?? "localhost") + call.head.path)
                xml.element("Bucket", bucket)
                xml.element("Key", objectKey)
                xml.element("ETag", attributes.etag)
                if let checksum = attributes.checksum, let text = attributes.checksumText {
                    xml.element("Checksum" + checksum.algorithm.rawValue.uppercased(), text)
                    xml.element("ChecksumType", attributes.checksumType.rawValue)
                }
                xml.close("CompleteMultipartUploadResult")
                return xml.response(headers: ServerSideEncryption.echoed(attributes.headers))
            }
        })
    }

    /// A Complete of an upload that is gone: a client's retry of a
    /// Complete that did complete (boto3 retries one whose answer came after
    /// its read timeout) answers as the first did, when the object is the
    /// one these parts make (its ETag is the MD5 of their MD5s, with their
    /// count); anything else is `NoSuchUpload`.
    static func alreadyCompleted(_ key: StoreKey, requested: [RequestedPart], id: String,
                                 store: any ValueStore) -> StoreReply<ObjectAttributes> {
        var md5s = Insecure.MD5()
        for part in requested {
            let hex = Array(unquoted(part.etag).utf8)
            guard hex.count == 32 else { return .now(.failure(S3Error.noSuchUpload(id))) }
            var digest: [UInt8] = []
            for i in stride(from: 0, to: 32, by: 2) {
                guard let high = HexDigit.value(hex[i]), let low = HexDigit.value(hex[i + 1]) else {
                    return .now(.failure(S3Error.noSuchUpload(id)))
                }
                digest.append(high << 4 | low)
            }
            md5s.update(data: digest)
        }
        let expected = Array(md5s.finalize())
        return store.currentMetadata(of: key).map { meta throws -> ObjectAttributes in
            guard let attributes = meta?.s3Attributes, attributes.parts == UInt32(requested.count), attributes.md5 == expected else {
                throw S3Error.noSuchUpload(id)
            }
            return attributes
        }
    }

    /// The uploaded parts the request names, in its order; S3's error for
    /// what is wrong, checked as S3 does: the order, then each part's
    /// presence, ETag and checksum, then the sizes.
    static func check(_ requested: [RequestedPart], against uploaded: [ListedValue], checksum: UploadChecksum?,
                      maxObjectBytes: Int64) throws(S3Error) -> [ListedValue] {
        for (earlier, later) in zip(requested, requested.dropFirst()) where later.number <= earlier.number {
            throw S3Error(.badRequest, "InvalidPartOrder", "The list of parts was not in ascending order. "
                          + "The parts list must be specified in order of the part number.")
        }
        var byNumber: [Int: ListedValue] = [:]
        for part in uploaded { if let n = MultipartLayout.number(ofPartKey: part.key) { byNumber[n] = part } }
        var chosen: [ListedValue] = []
        for named in requested {
            let (number, sum) = (named.number, named.checksum)
            let kept = byNumber[number]?.metadata.s3Attributes
            guard let part = byNumber[number], unquoted(part.metadata.s3ETag) == unquoted(named.etag),
                  sum == nil || (kept?.checksum?.algorithm == sum?.algorithm && kept?.checksumText == sum?.value) else {
                throw S3Error.invalidPart("One or more of the specified parts could not be found. The part may not have been "
                                          + "uploaded, or the specified entity tag may not match the part's entity tag. (part \(number))")
            }
            // A composite checksum is made of the parts': a part the request
            // names without its checksum is taken with the one it was uploaded
            // with (as Ceph does; AWS asks for each), and must have one.
            if let checksum, checksum.type == .composite, sum == nil, kept?.checksum?.algorithm != checksum.algorithm {
                throw S3Error.invalidRequest("The upload was created using a \(checksum.algorithm.rawValue) checksum. The complete "
                                             + "request must include the checksum for each part. It was missing for part \(number) "
                                             + "in the request.")
            }
            chosen.append(part)
        }
        for part in chosen.dropLast() where part.metadata.size < MultipartLayout.minimumPartBytes {
            throw S3Error(.badRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size. "
                          + "(\(part.key.split(separator: "/").last ?? "") is \(part.metadata.size) bytes; every part but the last needs 5 MiB)")
        }
        if chosen.reduce(0, { $0 + $1.metadata.size }) > UInt64(maxObjectBytes) { throw S3Error.entityTooLarge(limit: maxObjectBytes) }
        return chosen
    }

    static func unquoted(_ etag: String) -> Substring {
        var s = Substring(etag)
        if s.hasPrefix("&quot;") { s = s.dropFirst(6) }
        if s.hasSuffix("&quot;") { s = s.dropLast(6) }
        if s.hasPrefix("\"") { s = s.dropFirst() }
        if s.hasSuffix("\"") { s = s.dropLast() }
        return s
    }

    /// The object's attributes before its bytes: the upload's headers, the
    /// multipart ETag, and a composite checksum (a full-object one is
    /// reserved, its digest zero until the bytes are in). A checksum
    /// header of another algorithm than the upload's, or a type that is
    /// not the upload's, is `InvalidRequest`; a composite checksum that is
    /// not the one sent `BadDigest`.
    static func attributes(of chosen: [ListedValue], headers: [(name: String, value: String)], checksum: UploadChecksum?,
                           sent: (ChecksumAlgorithm, String)?, sentType: String?) throws(S3Error) -> ObjectAttributes {
        if let sent, sent.0 != checksum?.algorithm {
            throw S3Error.invalidRequest("The upload was created using \(checksum.map { "a " + $0.algorithm.rawValue } ?? "no") checksum; "
                                         + "the complete request's \(sent.0.header) cannot be checked against it.")
        }
        if let sentType, let checksum, sentType.uppercased() != checksum.type.rawValue {
            throw S3Error.invalidRequest("The upload was created using the \(checksum.type.rawValue) checksum mode. The complete "
                                         + "request must use the same checksum mode.")
        }
        var attributes = ObjectAttributes(headers: headers, checksum: checksum?.algorithm, type: checksum?.type ?? .fullObject)
        var md5s = Insecure.MD5()
        for part in chosen { md5s.update(data: part.metadata.s3Attributes?.md5 ?? []) }
        attributes.md5 = Array(md5s.finalize())
        attributes.parts = UInt32(chosen.count)
        // Each part's size and checksum, for GetObject's partNumber and GetObjectAttributes.
        attributes.partSizes = chosen.map(\.metadata.size)
        let partSums = chosen.compactMap { part in part.metadata.s3Attributes?.checksum.flatMap { $0.algorithm == checksum?.algorithm ? $0.digest : nil } }
        attributes.partDigests = partSums.count == chosen.count ? partSums : nil
        if let checksum, checksum.type == .composite {
            var digests: [[UInt8]] = []
            for part in chosen {
                guard let kept = part.metadata.s3Attributes?.checksum, kept.algorithm == checksum.algorithm else {
                    throw S3Error.invalidPart("part \(MultipartLayout.number(ofPartKey: part.key) ?? 0) has no "
                                              + "\(checksum.algorithm.rawValue) checksum")
                }
                digests.append(kept.digest)
            }
            attributes.checksum = (checksum.algorithm, checksum.composite(of: digests))
            if let sent, sent.1 != attributes.checksumText, sent.1 != attributes.checksum?.digest.base64 {
                throw S3Error(.badRequest, "BadDigest", "The \(sent.0.rawValue.uppercased()) you specified did not match the "
                              + "calculated checksum.")
            }
        }
        return attributes
    }

    /// Appends parts `index...` to `writer`, one store read at a time,
    /// through `running` when it computes the object's checksum.
    private static func append(_ parts: [ListedValue], from index: Int, to writer: WriterBox, running: RunningBox,
                               store: any ValueStore) -> StoreReply<Void> {
        guard index < parts.count else { return .now(.success(())) }
        return store.open(try! StoreKey(parts[index].key)).then { opened in
            do {
                let value = try opened.get()
                defer { value.close() }
                // A part uploaded again since the listing: its MD5 is not the one in the ETag.
                guard value.metadata.version == parts[index].metadata.version else {
                    throw S3Error.invalidPart("part \(MultipartLayout.number(ofPartKey: parts[index].key) ?? 0) changed while the upload completed")
                }
                // Parts cut into the object's segment size are copied as
                // they lie, compressed, in the kernel; others are streamed,
                // and so is every part of an object whose full-object
                // checksum is computed from its bytes.
                if running.checksum == nil, try writer.writer.join(value, isLast: index == parts.count - 1) {
                    return append(parts, from: index + 1, to: writer, running: running, store: store)
                }
                let stream = try value.identityStream()
                defer { stream.close() }
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceBytes, alignment: 16)
                defer { buffer.deallocate() }
                while true {
                    let n = try stream.read(into: buffer)
                    if n == 0 { break }
                    let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                    running.checksum?.update(piece)
                    try writer.writer.write(piece)
                }
            } catch {
                return .now(.failure(error))
            }
            return append(parts, from: index + 1, to: writer, running: running, store: store)
        }
    }

    /// A `<Part>` of the request: its number, ETag and the checksum it names, if any.
    struct RequestedPart {
        let number: Int
        let etag: String
        let checksum: (algorithm: ChecksumAlgorithm, value: String)?
    }

    /// The `<CompleteMultipartUpload>` document's parts.
    static func parts(xml body: [UInt8]) throws(S3Error) -> [RequestedPart] {
        let text = String(decoding: body, as: UTF8.self)
        guard text.contains("<CompleteMultipartUpload") else { throw DeleteRequest.malformed }
        var parts: [RequestedPart] = []
        var rest = Substring(text)
        while let open = rest.firstRange(of: "<Part>") {
            guard let close = rest[open.upperBound..<rest.endIndex].firstRange(of: "</Part>") else { throw DeleteRequest.malformed }
            let part = rest[open.upperBound..<close.lowerBound]
            guard let number = Self.element("PartNumber", in: part).flatMap({ Int($0) }),
                  MultipartLayout.partNumbers.contains(number),
                  let etag = Self.element("ETag", in: part) else { throw DeleteRequest.malformed }
            var checksum: (algorithm: ChecksumAlgorithm, value: String)?
            for algorithm in ChecksumAlgorithm.allCases {
                if let value = Self.element("Checksum" + algorithm.rawValue.uppercased(), in: part) {
                    checksum = (algorithm, try DeleteRequest.unescape(value).trimmingSpaces)
                }
            }
            parts.append(RequestedPart(number: number, etag: try DeleteRequest.unescape(etag), checksum: checksum))
            rest = rest[close.upperBound...]
        }
        guard !parts.isEmpty else {
            throw S3Error(.badRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against "
                          + "our published schema (a CompleteMultipartUpload needs at least one Part)")
        }
        return parts
    }

    private static func element(_ name: String, in text: Substring) -> Substring? {
        guard let open = text.firstRange(of: "<\(name)>"), let close = text[open.upperBound..<text.endIndex].firstRange(of: "</\(name)>")
        else { return nil }
        return text[open.upperBound..<close.lowerBound]
    }
}

/// The checksum a Complete computes over the object's bytes, handed from
/// one part's read to the next. Unchecked, as `WriterBox`: one step uses it
/// at a time, each after the last.
final class RunningBox: @unchecked Sendable {
    var checksum: RunningChecksum?
    init(_ checksum: RunningChecksum?) { self.checksum = checksum }
}
