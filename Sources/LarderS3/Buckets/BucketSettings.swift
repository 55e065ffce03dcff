import FoundationEssentials

/// What a bucket keeps besides its objects: its CORS rules
/// (PutBucketCors), its default encryption (PutBucketEncryption) and its
/// tags (PutBucketTagging). Kept
/// in the attributes of the bucket's marker (`BucketLayout.marker`), which
/// every write asks about already (does the bucket exist?), so they cost a
/// write nothing more to learn, and go with the bucket when it is deleted.
/// Rewriting the marker would move the bucket's creation date: the first
/// date is kept here.
///
/// Encoded as `LBS1` and JSON; at most `ValueMetadata.maxAttributeBytes`
/// (8 KiB) in all, which bounds a CORS configuration (S3's bound is 64 KiB).
struct BucketSettings: Codable, Equatable {
    /// The bucket's creation date, Unix nanoseconds, once its marker was rewritten.
    var createdNanos: Int64?
    var encryption: DefaultEncryption?
    var cors: [CORSRule]?
    /// The bucket's tags, in `x-amz-tagging` form (`ObjectTagging.query`).
    var tags: String?
    /// The region CreateBucket named (`LocationConstraint`), given back by
    /// GetBucketLocation; nil: us-east-1's empty one. Nothing else depends on it.
    var location: String?

    struct DefaultEncryption: Codable, Equatable {
        /// `AES256`, `aws:kms` or `aws:kms:dsse`.
        var algorithm: String
        var kmsKeyID: String?
        var bucketKeyEnabled: Bool?

        /// The headers kept with an object written without its own encryption.
        var kept: [(name: String, value: String)] {
            var kept = [(name: ServerSideEncryption.algorithm, value: algorithm)]
            if let kmsKeyID { kept.append((ServerSideEncryption.kmsKeyID, kmsKeyID)) }
            return kept
        }
    }

    var isEmpty: Bool { encryption == nil && cors == nil && tags == nil && location == nil }

    private static let magic = Array("LBS1".utf8)

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding plain strings, numbers and arrays cannot fail.
        return Self.magic + Array(try! encoder.encode(self))
    }

    /// The settings a marker's attributes hold; none for a marker without
    /// (or with attributes that are not these).
    init(decoding attributes: [UInt8]?) {
        guard let attributes, attributes.starts(with: Self.magic),
              let decoded = try? JSONDecoder().decode(BucketSettings.self, from: Data(attributes.dropFirst(Self.magic.count)))
        else {
            self.init()
            return
        }
        self = decoded
    }

    init() {}
}
