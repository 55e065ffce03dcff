/// One event of the change feed (`GET /events`, docs/http-api.md "Change feed"): the
/// SSE `id:` and `event:` lines, and the `data:` JSON object (`ChangeData`).
public struct ChangeEvent: Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable {
        case put, delete, expire
        /// Not a change: the server's history no longer reaches back to the
        /// id a reader resumed after, so changes may be missing in between.
        /// A reader that mirrors keys lists them again; the events after
        /// this one follow on from the reset's id.
        case reset
    }

    /// The event id, to resume from (`Last-Event-ID`): 16 hex digits that
    /// increase with every change.
    public var id: String
    public var kind: Kind
    public var data: ChangeData

    public init(id: String, kind: Kind, data: ChangeData) {
        self.id = id
        self.kind = kind
        self.data = data
    }

    /// The key changed; nil for a bulk delete.
    public var key: String? { data.key }
    /// The new value's ETag (puts).
    public var etag: String? { data.etag }
    /// For a bulk delete: the prefix every key under which is gone.
    public var prefix: String? { data.prefix }

    /// Whether this change touches `key`: a change to it, or a bulk delete
    /// of a prefix it lies under.
    public func concerns(key other: String) -> Bool {
        if let key { return key == other }
        return prefix.map { other.utf8.starts(with: $0.utf8) } ?? false
    }
}

/// The `data:` line of a change event: a key's change
/// (`{"key":…,"etag":…,"size":…}`) or a bulk delete
/// (`{"prefix":…,"deleted":N}`).
public struct ChangeData: Codable, Sendable, Hashable {
    public var key: String?
    public var etag: String?
    public var size: Int?
    /// For a put: `fixture` when the key reads as its fixture again.
    public var source: ValueSource?
    public var prefix: String?
    public var deleted: Int?
    /// For a bulk delete over fixtures: how many fixtures the keys read as now.
    public var fixtures: Int?

    public init(key: String? = nil, etag: String? = nil, size: Int? = nil, source: ValueSource? = nil,
                prefix: String? = nil, deleted: Int? = nil, fixtures: Int? = nil) {
        self.key = key
        self.etag = etag
        self.size = size
        self.source = source
        self.prefix = prefix
        self.deleted = deleted
        self.fixtures = fixtures
    }
}
