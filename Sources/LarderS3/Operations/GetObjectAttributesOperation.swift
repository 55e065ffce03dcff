import LarderHTTP
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// GetObjectAttributes (`GET /bucket/key?attributes`): the attributes
/// `x-amz-object-attributes` names (ETag, Checksum, ObjectParts,
/// StorageClass, ObjectSize) of an object, from its metadata alone. A
/// multipart object's parts are counted (`PartsCount`); Larder keeps
/// no size per part, so no `Part` is listed. An SSE-C object needs its key,
/// as GetObject does.
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
            if asked.contains("ObjectParts"), let parts = attributes?.parts, parts > 0 {
                xml.open("ObjectParts")
                xml.element("PartsCount", String(parts))  // SDKs read it as TotalPartsCount
                xml.element("IsTruncated", "false")
                xml.close("ObjectParts")
            }
            if asked.contains("StorageClass") { xml.element("StorageClass", "STANDARD") }
            if asked.contains("ObjectSize") { xml.element("ObjectSize", String(meta.size)) }
            xml.close("GetObjectAttributesResponse")
            return xml.response(headers: [("Last-Modified", HTTPDate.format(secondsSince1970: meta.modifiedSeconds))])
        }
    }
}
