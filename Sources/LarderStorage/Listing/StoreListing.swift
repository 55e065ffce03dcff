import LarderModel
import LarderValueFile

/// One key in a listing.
package struct ListedValue: Sendable {
    package let key: String
    package let metadata: ValueMetadata
    /// Bytes of the gzip file on disk.
    package let storedSize: Int
    /// The layer it comes from (fixtures are listed beside the store's keys).
    package package(set) var source: ValueSource = .store

    package init(key: String, metadata: ValueMetadata, storedSize: Int) {
        self.key = key
        self.metadata = metadata
        self.storedSize = storedSize
    }
}

/// A page of a listing: keys and common prefixes in byte order.
package struct StoreListing: Sendable {
    package var values: [ListedValue] = []
    /// Common prefixes ending in `/` (with `delimiter=/`).
    package var prefixes: [String] = []
    /// Pass as `after` for the next page; nil at the end.
    package var next: String?

    package init() {}
}

extension ListedValue {
    /// The entry as a listing page shows it.
    package var info: ValueInfo {
        ValueInfo(key: key, size: Int(metadata.size), storedSize: storedSize, contentType: metadata.contentType,
                  etag: metadata.etag, modified: Timestamp(nanoseconds: metadata.modifiedNanos),
                  expires: metadata.expiresNanos.map(Timestamp.init(nanoseconds:)), source: source)
    }
}
