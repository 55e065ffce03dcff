import LarderHTTP
import LarderStorage
import LarderSupport
import LarderValueFile
import LarderStoreVocabulary

/// ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation,
/// and the one question the other operations ask of buckets: does it exist?
/// A bucket exists while its marker does (`BucketLayout`), or while any key
/// lies under its prefix (a bucket made by writing `/store/b/k`).
struct BucketOperations: Sendable {
    let store: any ValueStore

    static let markerContentType = "application/x-larder-s3-bucket"

    /// Whether `bucket` exists: its marker first (one index lookup), then a
    /// one-key listing of its prefix.
    func exists(_ bucket: String) -> StoreReply<Bool> {
        let store = self.store
        return store.currentMetadata(of: BucketLayout.marker(bucket)).then { marker in
            if case .success(.some) = marker { return .now(.success(true)) }
            return store.list(prefix: BucketLayout.prefix(bucket), after: nil, limit: 1, groupByDirectory: true)
                .map { !$0.values.isEmpty || !$0.prefixes.isEmpty }
        }
    }

    // MARK: - ListBuckets

    /// Every bucket, by name; a page of `max-buckets` after
    /// `continuation-token` (the last name of the page before, as the
    /// answer's `ContinuationToken` gives it), of the names with `prefix`.
    func listBuckets(_ call: S3Call, _ query: S3Query) throws(S3Error) {
        var maxBuckets: Int?
        if let text = query["max-buckets"] {
            guard let n = Int(text), (1...10_000).contains(n) else {
                throw S3Error.invalidArgument("max-buckets must be an integer between 1 and 10000")
            }
            maxBuckets = n
        }
        let page = (max: maxBuckets, after: query["continuation-token"].flatMap { $0.isEmpty ? nil : $0 }, prefix: query["prefix"])
        // Top-level prefixes (buckets with keys) and markers (created
        // buckets), merged; a marker's time is the bucket's creation date.
        FullListing.collect(store, prefix: .root, group: true) { topLevel in
            FullListing.collect(store, prefix: BucketLayout.markerPrefix, group: false) { markers in
                let result = topLevel.flatMap { top in markers.map { (top, $0) } }
                call.answer(.now(result)) { result in
                    let (top, markers) = try result.get()
                    var created: [String: Int64] = [:]
                    for value in markers.values {
                        // A marker rewritten for the bucket's settings keeps its first date there.
                        created[String(value.key.dropFirst(BucketLayout.markerPrefixString.count))] =
                            BucketSettings(decoding: value.metadata.attributes).createdNanos ?? value.metadata.modifiedNanos
                    }
                    let now = store.clock.nowNanos()
                    for prefix in top.prefixes {
                        let name = String(prefix.dropLast())
                        if BucketLayout.isValidName(name), created[name] == nil { created[name] = now }
                    }
                    var xml = S3XML()
                    xml.open("ListAllMyBucketsResult", namespaced: true)
                    xml.open("Owner")
                    xml.element("ID", S3Owner.id)
                    xml.element("DisplayName", S3Owner.displayName)
                    xml.close("Owner")
                    xml.open("Buckets")
                    var names = created.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
                    if let prefix = page.prefix { names = names.filter { $0.hasPrefix(prefix) } }
                    if let after = page.after { names = names.filter { Array(after.utf8).lexicographicallyPrecedes(Array($0.utf8)) } }
                    let shown = page.max.map { Array(names.prefix($0)) } ?? names
                    for name in shown {
                        xml.open("Bucket")
                        xml.element("Name", name)
                        xml.element("CreationDate", S3Time.iso8601(nanos: created[name]!))
                        xml.close("Bucket")
                    }
                    xml.close("Buckets")
                    if shown.count < names.count, let last = shown.last { xml.element("ContinuationToken", last) }
                    if let prefix = page.prefix { xml.element("Prefix", prefix) }
                    xml.close("ListAllMyBucketsResult")
                    return xml.response()
                }
            }
        }
    }

    // MARK: - CreateBucket

    /// Writes the marker. A bucket that exists already answers 200, as S3
    /// does in us-east-1 for its owner (there is one owner here), so a test
    /// that creates its bucket on every run needs no cleanup first. A body
    /// (`CreateBucketConfiguration` with a location) is read and ignored:
    /// there is one region, whichever a client names.
    func create(_ bucket: String, _ call: S3Call, _ verified: SigV4Authenticator.Verified) throws(S3Error) -> HTTPBodyAction {
        guard BucketLayout.isValidName(bucket) else { throw S3Error.invalidBucketName(bucket) }
        let store = self.store
        let write: @Sendable ([UInt8]) -> Void = { body in
            var settings = BucketSettings()
            settings.location = Self.locationConstraint(body)
            let written: StoreReply<PutOutcome>
            do {
                // Only a new marker: an existing bucket keeps its date and settings.
                written = try store.beginS3Write(BucketLayout.marker(bucket), contentType: Self.markerContentType,
                                                 condition: WriteConditions.mustNotExist,
                                                 attributes: settings.isEmpty ? nil : settings.encoded()).finish()
            } catch {
                written = .now(.failure(error))
            }
            call.answer(written) { result in
                do {
                    _ = try result.get()
                } catch StoreError.preconditionFailed {
                    // There already: 200, as S3 answers its owner in us-east-1.
                }
                return HTTPResponse(status: .ok, headers: [("Location", "/" + bucket)])
            }
        }
        guard call.head.hasBody else {
            write([])
            return .ignore
        }
        return .receive(SmallBodySink(call: call, verified: verified, checks: try BodyChecks(call.head, payload: verified.payload),
                                      limit: 64 * 1024) { body in write(body) })
    }

    /// A `CreateBucketConfiguration`'s `LocationConstraint`; nil for none
    /// or us-east-1's (written as none, as S3 does).
    static func locationConstraint(_ body: [UInt8]) -> String? {
        guard !body.isEmpty,
              let value = try? S3XMLReader.values("LocationConstraint", in: Substring(String(decoding: body, as: UTF8.self))).first,
              !value.isEmpty, value != S3Owner.region else { return nil }
        return value
    }

    // MARK: - HeadBucket, GetBucketLocation

    func head(_ bucket: String, _ call: S3Call) {
        call.answer(exists(bucket)) { exists in
            guard try exists.get() else { throw S3Error.noSuchBucket(bucket) }
            return HTTPResponse(status: .ok, headers: [("x-amz-bucket-region", S3Owner.region)])
        }
    }

    func location(_ bucket: String, _ call: S3Call) {
        call.answer(BucketSettingsOperations(store: store, buckets: self).settings(bucket)) { settings in
            let location = try settings.get().location ?? ""
            var xml = S3XML()
            // us-east-1 is written as an empty constraint, as S3 does.
            xml.text += "<LocationConstraint xmlns=\"\(S3XML.namespace)\">\(S3XML.escape(location))</LocationConstraint>"
            return xml.response()
        }
    }

    // MARK: - DeleteBucket

    /// 409 `BucketNotEmpty` while any key lies under the bucket; else the
    /// marker goes, and with it the bucket.
    func delete(_ bucket: String, _ call: S3Call) {
        let store = self.store
        let listed = store.list(prefix: BucketLayout.prefix(bucket), after: nil, limit: 1, groupByDirectory: true)
        let deleted: StoreReply<Bool> = listed.then { listing in
            switch listing {
            case .failure(let error): return .now(.failure(error))
            case .success(let page) where !page.values.isEmpty || !page.prefixes.isEmpty:
                return .now(.failure(S3Error.bucketNotEmpty(bucket)))
            case .success:
                return store.delete(BucketLayout.marker(bucket), condition: nil)
            }
        }
        call.answer(deleted) { existed in
            guard try existed.get() else { throw S3Error.noSuchBucket(bucket) }
            return HTTPResponse(status: .noContent)
        }
    }
}

/// The one owner and region of every bucket (no accounts here).
enum S3Owner {
    static let id = "larder"
    static let displayName = "larder"
    static let region = "us-east-1"
}
