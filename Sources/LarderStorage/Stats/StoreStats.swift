import LarderValueFile
/// How much a store holds, as `/metrics` reports it. Any `ValueStore`
/// answers the same three numbers, so another backend reports alike.
public struct StoreStats: Sendable, Equatable {
    /// Values stored (a value that expired counts until the sweep removes it).
    public var keys: Int
    /// Their sizes, decompressed: what a GET without gzip returns.
    public var logicalBytes: Int64
    /// Their files on disk: the gzip bytes, Larder's header with the metadata included.
    public var storedBytes: Int64

    public init(keys: Int = 0, logicalBytes: Int64 = 0, storedBytes: Int64 = 0) {
        self.keys = keys
        self.logicalBytes = logicalBytes
        self.storedBytes = storedBytes
    }
}
