import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// GetObjectAttributes (`GET /bucket/key?attributes`): the attributes
/// `x-amz-object-attributes` names (ETag, Checksum, ObjectParts,
/// StorageClass, ObjectSize) of an object, from its metadata alone. A
/// multipart object's parts are counted (`PartsCount`) and listed, a page
/// at a time (`x-amz-max-parts` after `x-amz-part-number-marker`), each
/// with its size and checksum as Complete kept them (an object completed
/// before Larder kept them lists none). An SSE-C object needs its key, as
/// GetObject does.
struct GetObjectAttributesOperation: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations

    static let known: Set<String> = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]

    func attributes(_ key: StoreKey, bucket: String, objectKey: String, _ call: S3Call) throws(S3Error) {
        let asked = Set((call.head.headers["x-amz-object-attributes"] ?? "").split(separator: ",").map { $0.trimmingSpaces })
            .subtracting([""])
        guard !asked.isEmpty else {
            throw S3Error.invalidArgument("x-amz-object-attributes must name at least one of \(Self.known.sorted().joined(separator: ", "))")
        }
        if let unknown = asked.first(where: { !Self.known.contains($0) }) {
            throw S3Error.invalidArgument("Invalid attribute name specified: \(unknown)")
        }
        let maxParts = try Self.integer(call.head.headers["x-amz-max-parts"], name: "x-amz-max-parts") ?? 1000
        let marker = try Self.integer(call.head.headers["x-amz-part-number-marker"], name: "x-amz-part-number-marker") ?? 0
        let buckets = self.buckets
        let found: StoreReply<ValueMetadata> = store.currentMetadata(of: key).then { result in
            guard case .success(.none) = result else { return .now(result.map { $0! }) }
            return buckets.exists(bucket).map { exists throws -> ValueMetadata in
                throw exists ? S3Error.noSuchKey(objectKey) : S3Error.noSuchBucket(bucket)
            }
        }
        let head = call.head
        call.answer(found) { result in
            let meta = try result.get()
            let attributes = meta.s3Attributes
            try ServerSideEncryption.checkRead(head.headers, kept: attributes?.headers ?? [])
            var xml = S3XML()
            xml.open("GetObjectAttributesResponse", namespaced: true)
            if asked.contains("ETag") {
                // Unquoted, as this answer gives it.
                xml.element("ETag", String((attributes?.etag ?? meta.etag).filter { $0 != "\"" }))
            }
            if asked.contains("Checksum"), let attributes, let checksum = attributes.checksum, let text = attributes.checksumText {
                xml.open("Checksum")
                xml.element("Checksum" + checksum.algorithm.rawValue.uppercased(), text)
                xml.element("ChecksumType", attributes.checksumType.rawValue)
                xml.close("Checksum")
            }
            if asked.contains("ObjectParts"), let attributes, attributes.parts > 0 {
                Self.parts(attributes, maxParts: maxParts, marker: marker, into: &xml)
            }
            if asked.contains("StorageClass") { xml.element("StorageClass", "STANDARD") }
            if asked.contains("ObjectSize") { xml.element("ObjectSize", String(meta.size)) }
            xml.close("GetObjectAttributesResponse")
            return xml.response(headers: [("Last-Modified", HTTPDate.format(secondsSince1970: meta.modifiedSeconds))])
        }
    }

    private static func integer(_ text: String?, name: String) throws(S3Error) -> Int? {
        guard let text else { return nil }
        guard let n = Int(text), n >= 0 else { throw S3Error.invalidArgument("\(name) must be a non-negative integer") }
        return n
    }

    /// `<ObjectParts>`: the count, and the page of parts after `marker`.
    static func parts(_ attributes: ObjectAttributes, maxParts: Int, marker: Int, into xml: inout S3XML) {
        let count = Int(attributes.parts)
        xml.open("ObjectParts")
        xml.element("PartsCount", String(count))  // SDKs read it as TotalPartsCount
        xml.element("PartNumberMarker", String(marker))
        xml.element("MaxParts", String(maxParts))
        let sizes = attributes.partSizes ?? []
        let shown = sizes.count == count ? Array(sizes.indices.dropFirst(min(marker, count)).prefix(maxParts)) : []
        let truncated = (shown.last.map { $0 + 1 } ?? count) < count
        xml.element("IsTruncated", truncated ? "true" : "false")
        if truncated, let last = shown.last { xml.element("NextPartNumberMarker", String(last + 1)) }
        let name = attributes.checksum.map { "Checksum" + $0.algorithm.rawValue.uppercased() }
        for index in shown {
            xml.open("Part")
            xml.element("PartNumber", String(index + 1))
            xml.element("Size", String(sizes[index]))
            if let name, let digest = attributes.partDigests?[index] { xml.element(name, digest.base64) }
            xml.close("Part")
        }
        xml.close("ObjectParts")
    }
}
