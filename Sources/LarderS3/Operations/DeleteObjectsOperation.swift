import LarderHTTP
import LarderStorage
import LarderValueFile

/// DeleteObjects (`POST /bucket?delete`): up to 1000 keys named in a
/// `<Delete>` document, deleted one after another; each is reported
/// `<Deleted>` whether or not it existed, as S3 reports them (only errors
/// with `<Quiet>true</Quiet>`). A `<VersionId>` may name the one version
/// Larder keeps, `null` (echoed back); any other is that key's error.
struct DeleteObjectsOperation: Sendable {
    let store: any ValueStore
    let buckets: BucketOperations

    static let maxBodyBytes = 2 << 20

    func delete(_ bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        let store = self.store, buckets = self.buckets
        let checks = try BodyChecks(call.head, payload: verified.payload)
        return .receive(SmallBodySink(call: call, verified: verified, checks: checks, limit: Self.maxBodyBytes) { body in
            let request: DeleteRequest
            do { request = try DeleteRequest(xml: body) } catch { call.fail(S3Call.s3Error(error, logger: call.logger, context: "DeleteObjects")); return }
            call.answer(buckets.exists(bucket)) { exists in
                guard try exists.get() else { throw S3Error.noSuchBucket(bucket) }
                let unknownVersions = request.keys.indices.filter { request.versionIds[$0].map { $0 != "null" } ?? false }
                let refused = unknownVersions.map { (key: request.keys[$0], error: S3Error.invalidArgument("Invalid version id specified")) }
                let keys = request.keys.indices.filter { !unknownVersions.contains($0) }.map { request.keys[$0] }
                Self.deleteAll(keys, from: 0, bucket: bucket, store: store, errors: refused) { errors in
                    var xml = S3XML()
                    xml.open("DeleteResult", namespaced: true)
                    let failed = Set(errors.map { $0.key })
                    if !request.quiet {
                        for (key, version) in zip(request.keys, request.versionIds) where !failed.contains(key) {
                            xml.open("Deleted")
                            xml.element("Key", key)
                            if let version { xml.element("VersionId", version) }
                            xml.close("Deleted")
                        }
                    }
                    for error in errors {
                        xml.open("Error")
                        xml.element("Key", error.key)
                        xml.element("Code", error.error.code)
                        xml.element("Message", error.error.message)
                        xml.close("Error")
                    }
                    xml.close("DeleteResult")
                    call.respond(xml.response())
                }
                return nil
            }
        })
    }

    /// Deletes `keys[index...]` one at a time (each after the last one's
    /// answer), then hands over the keys that failed.
    private static func deleteAll(_ keys: [String], from index: Int, bucket: String, store: any ValueStore,
                                  errors: [(key: String, error: S3Error)],
                                  _ done: @escaping @Sendable ([(key: String, error: S3Error)]) -> Void) {
        guard index < keys.count else { done(errors); return }
        let key = keys[index]
        guard let storeKey = try? BucketLayout.key(bucket: bucket, objectKey: Array(key.utf8)) else {
            // A key Larder cannot hold holds nothing: deleted, as S3 says of a missing key.
            deleteAll(keys, from: index + 1, bucket: bucket, store: store, errors: errors, done)
            return
        }
        store.delete(storeKey, condition: nil).whenDone { result in
            var errors = errors
            if case .failure(let error) = result {
                errors.append((key, .internalError("\(error)")))
            }
            deleteAll(keys, from: index + 1, bucket: bucket, store: store, errors: errors, done)
        }
    }
}

/// The `<Delete>` document of DeleteObjects: its keys and `Quiet`. Read by
/// hand: the document is flat, and its elements are known.
struct DeleteRequest: Sendable {
    var keys: [String] = []
    /// Each key's `<VersionId>`, if it named one.
    var versionIds: [String?] = []
    var quiet = false

    static let maxKeys = 1000

    init(xml body: [UInt8]) throws(S3Error) {
        let text = String(decoding: body, as: UTF8.self)
        guard text.contains("<Delete") else { throw Self.malformed }
        var rest = Substring(text)
        while let open = rest.firstRange(of: "<Object>") {
            guard let close = rest[open.upperBound..<rest.endIndex].firstRange(of: "</Object>") else { throw Self.malformed }
            let object = rest[open.upperBound..<close.lowerBound]
            guard let keyOpen = object.firstRange(of: "<Key>"), let keyClose = object.firstRange(of: "</Key>"), keyOpen.upperBound <= keyClose.lowerBound
            else { throw Self.malformed }
            keys.append(try Self.unescape(object[keyOpen.upperBound..<keyClose.lowerBound]))
            if let open = object.firstRange(of: "<VersionId>"), let close = object.firstRange(of: "</VersionId>"), open.upperBound <= close.lowerBound {
                versionIds.append(try Self.unescape(object[open.upperBound..<close.lowerBound]))
            } else {
                versionIds.append(nil)
            }
            rest = rest[close.upperBound...]
        }
        guard !keys.isEmpty, keys.count <= Self.maxKeys else { throw Self.malformed }
        quiet = text.contains("<Quiet>true</Quiet>")
    }

    static let malformed = S3Error(.badRequest, "MalformedXML",
                                   "The XML you provided was not well-formed or did not validate against our published schema")

    /// XML's five entities and character references.
    static func unescape(_ text: Substring) throws(S3Error) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";") else { throw malformed }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let number = entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16)
                    : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                guard let number, let scalar = Unicode.Scalar(number) else { throw malformed }
                out.unicodeScalars.append(scalar)
            }
            rest = rest[rest.index(after: semi)...]
        }
        return out + rest
    }
}
