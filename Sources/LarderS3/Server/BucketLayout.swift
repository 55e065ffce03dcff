import LarderValueFile
import LarderStoreVocabulary

/// Where S3's buckets and objects lie among Larder's keys: bucket `b` is
/// the prefix `b/`, object `k` in it the key `b/k`, so both faces see the
/// same values. An empty bucket exists through a marker key of its own,
/// `.larder-s3/buckets/b`, kept apart from the bucket's prefix so that no
/// listing of the bucket (S3's or `/store/b/`) shows it, and a reset of the
/// store (`DELETE /store/`) removes buckets with their objects. S3 bucket
/// names cannot start with `.`, so no bucket is ever named `.larder-s3`.
enum BucketLayout {
    static let markerPrefixString = ".larder-s3/buckets/"
    static let markerPrefix = try! StorePrefix(bytes: Array(markerPrefixString.utf8))
    static let markerTopLevel = ".larder-s3/"

    static func marker(_ bucket: String) -> StoreKey {
        // A valid bucket name is a valid key segment.
        try! StoreKey(markerPrefixString + bucket)
    }

    /// The S3 object key of Larder key `key` (bucket included).
    static func objectKey(_ key: String, bucket: String) -> String {
        S3KeyEscaping.unescape(String(decoding: key.utf8.dropFirst(bucket.utf8.count + 1), as: UTF8.self))
    }

    static func prefix(_ bucket: String) -> StorePrefix {
        try! StorePrefix(bytes: Array((bucket + "/").utf8))
    }

    /// The Larder key of object `key` (its bytes, percent-decoded) in
    /// `bucket`: `S3KeyEscaping` keeps the segments Larder refuses.
    static func key(bucket: String, objectKey: [UInt8]) throws(S3Error) -> StoreKey {
        let escaped = S3KeyEscaping.escape(objectKey)
        do {
            return try StoreKey(bytes: Array(bucket.utf8) + [0x2F] + escaped)
        } catch StoreError.invalidKey(let why) {
            if escaped.count + bucket.utf8.count + 1 > StoreKey.maxKeyBytes {
                throw S3Error.keyTooLong("Your key is too long: \(why)")
            }
            throw S3Error.invalidArgument("this object key cannot be stored in Larder: \(why)")
        } catch {
            throw S3Error.invalidArgument("this object key cannot be stored in Larder")
        }
    }

    /// S3's rules for new buckets: 3 to 63 characters of `a-z`, `0-9`, `.`
    /// and `-`, starting and ending with a letter or digit, no `..`, not an
    /// IP address.
    static func isValidName(_ name: String) -> Bool {
        let b = Array(name.utf8)
        guard (3...63).contains(b.count) else { return false }
        func alnum(_ c: UInt8) -> Bool { (0x61...0x7A).contains(c) || (0x30...0x39).contains(c) }
        guard alnum(b.first!), alnum(b.last!) else { return false }
        guard b.allSatisfy({ alnum($0) || $0 == 0x2E || $0 == 0x2D }) else { return false }
        if name.contains("..") || name.contains(".-") || name.contains("-.") { return false }
        let parts = name.split(separator: ".")
        if parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) { return false }
        return true
    }
}
