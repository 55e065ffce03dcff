/// One page of `GET /store/<prefix>/` (docs/http-api.md "Listing"): keys in byte
/// order, the folded common prefixes with `delimiter=/`, and where the next
/// page starts.
public struct ListingPage: Codable, Sendable, Hashable {
    public var prefix: String
    public var keys: [ValueInfo]
    /// Common prefixes ending in `/` (listing one level).
    public var prefixes: [String]
    /// The key to pass as `after` for the next page; nil on the last page.
    public var next: String?

    public init(prefix: String, keys: [ValueInfo], prefixes: [String] = [], next: String? = nil) {
        self.prefix = prefix
        self.keys = keys
        self.prefixes = prefixes
        self.next = next
    }

    enum CodingKeys: String, CodingKey { case prefix, keys, prefixes, next }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        prefix = try c.decode(String.self, forKey: .prefix)
        keys = try c.decode([ValueInfo].self, forKey: .keys)
        prefixes = try c.decodeIfPresent([String].self, forKey: .prefixes) ?? []
        next = try c.decodeIfPresent(String.self, forKey: .next)
    }

    /// `next` is always written, `null` on the last page.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(prefix, forKey: .prefix)
        try c.encode(keys, forKey: .keys)
        try c.encode(prefixes, forKey: .prefixes)
        try c.encodeOrNull(next, forKey: .next)
    }
}
