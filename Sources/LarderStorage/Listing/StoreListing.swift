import LarderModel
import LarderValueFile

/// One key in a listing.
public struct ListedValue: Sendable {
    public let key: String
    public let metadata: ValueMetadata
    /// Bytes of the gzip file on disk.
    public let storedSize: Int
    /// The layer it comes from (fixtures are listed beside the store's keys).
    public package(set) var source: ValueSource = .store

    package init(key: String, metadata: ValueMetadata, storedSize: Int) {
        self.key = key
        self.metadata = metadata
        self.storedSize = storedSize
    }
}

/// A page of a listing: keys and common prefixes in byte order.
public struct StoreListing: Sendable {
    public var values: [ListedValue] = []
    /// Common prefixes ending in `/` (with `delimiter=/`).
    public var prefixes: [String] = []
    /// Pass as `after` for the next page; nil at the end.
    public var next: String?

    package init() {}
}

extension ListedValue {
    /// The entry as a listing page shows it.
    public var info: ValueInfo {
        ValueInfo(key: key, size: Int(metadata.size), storedSize: storedSize, contentType: metadata.contentType,
                  etag: metadata.etag, modified: Timestamp(nanoseconds: metadata.modifiedNanos),
                  expires: metadata.expiresNanos.map(Timestamp.init(nanoseconds:)), source: source)
    }
}
