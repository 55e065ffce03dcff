/// What is known about one stored value without its bytes: a listing entry
/// (docs/http-api.md "Listing"), and the metadata a fetch returns beside the bytes.
public struct ValueInfo: Codable, Sendable, Hashable {
    public var key: String
    /// Bytes of the value itself (decompressed).
    public var size: Int
    /// Bytes of its gzip file on disk. Listings always say; a fetch over HTTP
    /// does not learn it (nil).
    public var storedSize: Int?
    public var contentType: String
    /// The strong ETag of the identity representation, quotes included.
    public var etag: String
    public var modified: Timestamp
    /// When the value stops being readable (set with a TTL); nil: never.
    public var expires: Timestamp?
    /// Which layer answers for the key: the store, or a fixture under it.
    public var source: ValueSource

    public init(key: String, size: Int, storedSize: Int?, contentType: String, etag: String,
                modified: Timestamp, expires: Timestamp? = nil, source: ValueSource = .store) {
        self.key = key
        self.size = size
        self.storedSize = storedSize
        self.contentType = contentType
        self.etag = etag
        self.modified = modified
        self.expires = expires
        self.source = source
    }

    enum CodingKeys: String, CodingKey {
        case key, size, storedSize, contentType, etag, modified, expires, source
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        key = try c.decode(String.self, forKey: .key)
        size = try c.decode(Int.self, forKey: .size)
        storedSize = try c.decodeIfPresent(Int.self, forKey: .storedSize)
        contentType = try c.decode(String.self, forKey: .contentType)
        etag = try c.decode(String.self, forKey: .etag)
        modified = try c.decode(Timestamp.self, forKey: .modified)
        expires = try c.decodeIfPresent(Timestamp.self, forKey: .expires)
        source = try c.decodeIfPresent(ValueSource.self, forKey: .source) ?? .store
    }

    /// `expires` is always written (`null` when none), as docs/http-api.md shows it;
    /// `source` only for a fixture, the exception.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(key, forKey: .key)
        try c.encode(size, forKey: .size)
        try c.encodeIfPresent(storedSize, forKey: .storedSize)
        try c.encode(contentType, forKey: .contentType)
        try c.encode(etag, forKey: .etag)
        try c.encode(modified, forKey: .modified)
        try c.encodeOrNull(expires, forKey: .expires)
        if source != .store { try c.encode(source, forKey: .source) }
    }
}

/// The layer a value is read from.
public enum ValueSource: String, Codable, Sendable, Hashable {
    /// Written to the store.
    case store
    /// A file of the read-only fixtures directory (`--fixtures`).
    case fixture
}
