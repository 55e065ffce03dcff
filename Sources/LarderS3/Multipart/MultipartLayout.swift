import LarderValueFile
import LarderStoreVocabulary

/// Where a multipart upload in progress lies among Larder's keys, beside
/// the bucket markers under `.larder-s3/` (hidden from bucket listings,
/// removed by a reset like every other key): its record
/// `.larder-s3/uploads/<bucket>/<id>` (the object's key as its value, the
/// object's Content-Type and kept headers as its own), and each part as a
/// value `.larder-s3/parts/<bucket>/<id>/<number, 5 digits>` with its MD5 in
/// its attributes. So an upload survives a restart, on either store, and
/// Abort or Complete removes it with one prefix delete.
enum MultipartLayout {
    static let recordsPrefix = ".larder-s3/uploads/"
    static let partsPrefix = ".larder-s3/parts/"

    /// Upload ids: 32 hex digits, random.
    static func newID() -> String {
        (0..<2).map { _ in
            let hex = String(UInt64.random(in: 0...UInt64.max), radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// An id as a client sent it; `NoSuchUpload` for one Larder never made.
    static func checkID(_ id: String) throws(S3Error) -> String {
        guard id.utf8.count == 32, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw S3Error.noSuchUpload(id)
        }
        return id
    }

    static func record(_ bucket: String, _ id: String) -> StoreKey {
        try! StoreKey(recordsPrefix + bucket + "/" + id)
    }

    static func records(_ bucket: String) -> StorePrefix {
        try! StorePrefix(bytes: Array((recordsPrefix + bucket + "/").utf8))
    }

    static func parts(_ bucket: String, _ id: String) -> StorePrefix {
        try! StorePrefix(bytes: Array((partsPrefix + bucket + "/" + id + "/").utf8))
    }

    static func part(_ bucket: String, _ id: String, _ number: Int) -> StoreKey {
        let digits = String(number)
        return try! StoreKey(partsPrefix + bucket + "/" + id + "/" + String(repeating: "0", count: 5 - digits.count) + digits)
    }

    /// The part number of a part's key (its last segment).
    static func number(ofPartKey key: String) -> Int? {
        key.split(separator: "/").last.flatMap { Int($0) }
    }

    /// S3's part numbers.
    static let partNumbers = 1...10_000
    /// Every part but the last is at least this large, as on S3.
    static let minimumPartBytes: UInt64 = 5 << 20
}
