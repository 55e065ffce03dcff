import Crypto
import Dispatch
import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile

/// CompleteMultipartUpload: the parts the request names, checked against
/// those uploaded (each there with that ETag, in ascending order, all but
/// the last at least 5 MiB), streamed one after another into one write of
/// the object, never a whole part in memory. The object's ETag is S3's:
/// the MD5 of the parts' MD5s, then `-<parts>`. Once it is published the
/// upload's record and parts are deleted.
struct MultipartCompletion: Sendable {
    let store: any ValueStore
    let maxObjectBytes: Int64
    /// Bytes moved per read of a part.
    static let pieceBytes = 256 * 1024

    func complete(_ key: StoreKey, bucket: String, objectKey: String, id: String, _ call: S3Call,
                  _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let id = try MultipartLayout.checkID(id)
        let checks = try BodyChecks(call.head, payload: verified.payload)
        let (store, maxObjectBytes) = (self.store, self.maxObjectBytes)
        let condition = ObjectConditions.writeCondition(call.head)
        return .receive(SmallBodySink(call: call, verified: verified, checks: checks, limit: 1 << 20) { body in
            let requested: [(number: Int, etag: String)]
            do throws(S3Error) { requested = try Self.parts(xml: body) } catch { call.fail(error); return }
            let record = MultipartLayout.record(bucket, id)
            let done: StoreReply<ObjectAttributes> = store.open(record).then { opened -> StoreReply<ObjectAttributes> in
                guard case .success(let value) = opened else {
                    guard case .failure(StoreError.notFound) = opened else { return .now(.failure(opened.failure!)) }
                    return Self.alreadyCompleted(key, requested: requested, id: id, store: store)
                }
                let meta = value.metadata
                value.close()
                return store.list(prefix: MultipartLayout.parts(bucket, id), after: nil, limit: MultipartLayout.partNumbers.count,
                                  groupByDirectory: false).then { listing -> StoreReply<ObjectAttributes> in
                    do {
                        let uploaded = try listing.get().values
                        let chosen = try Self.check(requested, against: uploaded, maxObjectBytes: maxObjectBytes)
                        var attributes = ObjectAttributes(headers: meta.s3Attributes?.headers ?? [], checksum: nil)
                        var md5s = Insecure.MD5()
                        for part in chosen { md5s.update(data: part.metadata.s3Attributes?.md5 ?? []) }
                        attributes.md5 = Array(md5s.finalize())
                        attributes.parts = UInt32(chosen.count)
                        let writer = try store.beginUpload(key: key, contentType: meta.contentType, encoding: .identity,
                                                           expiresNanos: nil, condition: condition)
                        do {
                            try writer.setAttributes(attributes.encoded())
                            try writer.expect(bytes: Int64(chosen.reduce(0) { $0 + $1.metadata.size }))
                        } catch {
                            writer.abort()
                            throw error
                        }
                        let (made, box) = (attributes, WriterBox(writer))
                        return Self.append(chosen, from: 0, to: box, store: store)
                            .then { appended -> StoreReply<ObjectAttributes> in
                                guard case .success = appended else { box.writer.abort(); return .now(.failure(appended.failure!)) }
                                return box.writer.finish().map { _ in made }
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
                xml.element("Location", "/" + bucket + "/" + objectKey)
                xml.element("Bucket", bucket)
                xml.element("Key", objectKey)
                xml.element("ETag", attributes.etag)
                xml.close("CompleteMultipartUploadResult")
                return xml.response()
            }
        })
    }

    /// A Complete of an upload that is gone: a client's retry of a
    /// Complete that did complete (boto3 retries one whose answer came after
    /// its read timeout) answers as the first did, when the object is the
    /// one these parts make (its ETag is the MD5 of their MD5s, with their
    /// count); anything else is `NoSuchUpload`.
    static func alreadyCompleted(_ key: StoreKey, requested: [(number: Int, etag: String)], id: String,
                                 store: any ValueStore) -> StoreReply<ObjectAttributes> {
        var md5s = Insecure.MD5()
        for (_, etag) in requested {
            let hex = Array(unquoted(etag).utf8)
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
    /// presence and ETag, then the sizes.
    static func check(_ requested: [(number: Int, etag: String)], against uploaded: [ListedValue],
                      maxObjectBytes: Int64) throws(S3Error) -> [ListedValue] {
        for (earlier, later) in zip(requested, requested.dropFirst()) where later.number <= earlier.number {
            throw S3Error(.badRequest, "InvalidPartOrder", "The list of parts was not in ascending order. "
                          + "The parts list must be specified in order of the part number.")
        }
        var byNumber: [Int: ListedValue] = [:]
        for part in uploaded { if let n = MultipartLayout.number(ofPartKey: part.key) { byNumber[n] = part } }
        var chosen: [ListedValue] = []
        for (number, etag) in requested {
            guard let part = byNumber[number], unquoted(part.metadata.s3ETag) == unquoted(etag) else {
                throw S3Error.invalidPart("One or more of the specified parts could not be found. The part may not have been "
                                          + "uploaded, or the specified entity tag may not match the part's entity tag. (part \(number))")
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

    /// Appends parts `index...` to `writer`, one store read at a time.
    private static func append(_ parts: [ListedValue], from index: Int, to writer: WriterBox,
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
                // they lie, compressed, in the kernel; others are streamed.
                if try writer.writer.join(value, isLast: index == parts.count - 1) {
                    return append(parts, from: index + 1, to: writer, store: store)
                }
                let stream = try value.identityStream()
                defer { stream.close() }
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pieceBytes, alignment: 16)
                defer { buffer.deallocate() }
                while true {
                    let n = try stream.read(into: buffer)
                    if n == 0 { break }
                    try writer.writer.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                }
            } catch {
                return .now(.failure(error))
            }
            return append(parts, from: index + 1, to: writer, store: store)
        }
    }

    /// The `<CompleteMultipartUpload>` document's parts: number and ETag each.
    static func parts(xml body: [UInt8]) throws(S3Error) -> [(number: Int, etag: String)] {
        let text = String(decoding: body, as: UTF8.self)
        guard text.contains("<CompleteMultipartUpload") else { throw DeleteRequest.malformed }
        var parts: [(number: Int, etag: String)] = []
        var rest = Substring(text)
        while let open = rest.range(of: "<Part>") {
            guard let close = rest.range(of: "</Part>", range: open.upperBound..<rest.endIndex) else { throw DeleteRequest.malformed }
            let part = rest[open.upperBound..<close.lowerBound]
            guard let number = Self.element("PartNumber", in: part).flatMap({ Int($0) }),
                  MultipartLayout.partNumbers.contains(number),
                  let etag = Self.element("ETag", in: part) else { throw DeleteRequest.malformed }
            parts.append((number, try DeleteRequest.unescape(etag)))
            rest = rest[close.upperBound...]
        }
        guard !parts.isEmpty else {
            throw S3Error(.badRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against "
                          + "our published schema (a CompleteMultipartUpload needs at least one Part)")
        }
        return parts
    }

    private static func element(_ name: String, in text: Substring) -> Substring? {
        guard let open = text.range(of: "<\(name)>"), let close = text.range(of: "</\(name)>", range: open.upperBound..<text.endIndex)
        else { return nil }
        return text[open.upperBound..<close.lowerBound]
    }
}
