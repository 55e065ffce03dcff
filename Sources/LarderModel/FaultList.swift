/// `GET /faults` (docs/http-api.md "Faults on purpose"): the rules as given, each with
/// its name and counters, and the seed of the draws (null: random).
public struct FaultList: Codable, Sendable, Hashable {
    public var rules: [FaultRuleStatus]
    public var seed: UInt64?

    public init(rules: [FaultRuleStatus], seed: UInt64?) {
        self.rules = rules
        self.seed = seed
    }

    enum CodingKeys: String, CodingKey { case rules, seed }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rules, forKey: .rules)
        try c.encodeOrNull(seed, forKey: .seed)
    }
}

/// One fault rule as `GET /faults` shows it. Absent fields are `null`.
public struct FaultRuleStatus: Codable, Sendable, Hashable {
    public var id: String
    public var prefix: String
    public var methods: [String]?
    public var delayMs: Int
    public var jitterMs: Int
    public var status: Int?
    /// `"before"` or `"after"`: the connection is reset instead of answered.
    public var drop: String?
    /// Body bytes sent before the connection closes.
    public var truncate: Int64?
    /// The rate the answer's body is sent and the request's read at.
    public var bytesPerSecond: Int?
    public var probability: Double
    public var count: Int?
    /// How many more times it fires; null without a count.
    public var remaining: Int?
    public var matched: Int
    public var fired: Int

    public init(id: String, prefix: String, methods: [String]?, delayMs: Int, jitterMs: Int, status: Int?,
                drop: String? = nil, truncate: Int64? = nil, bytesPerSecond: Int? = nil,
                probability: Double, count: Int?, remaining: Int?, matched: Int, fired: Int) {
        self.id = id
        self.prefix = prefix
        self.methods = methods
        self.delayMs = delayMs
        self.jitterMs = jitterMs
        self.status = status
        self.drop = drop
        self.truncate = truncate
        self.bytesPerSecond = bytesPerSecond
        self.probability = probability
        self.count = count
        self.remaining = remaining
        self.matched = matched
        self.fired = fired
    }

    enum CodingKeys: String, CodingKey {
        case id, prefix, methods, delayMs, jitterMs, status, drop, truncate, bytesPerSecond, probability, count, remaining, matched, fired
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(prefix, forKey: .prefix)
        try c.encodeOrNull(methods, forKey: .methods)
        try c.encode(delayMs, forKey: .delayMs)
        try c.encode(jitterMs, forKey: .jitterMs)
        try c.encodeOrNull(status, forKey: .status)
        try c.encodeOrNull(drop, forKey: .drop)
        try c.encodeOrNull(truncate, forKey: .truncate)
        try c.encodeOrNull(bytesPerSecond, forKey: .bytesPerSecond)
        try c.encode(probability, forKey: .probability)
        try c.encodeOrNull(count, forKey: .count)
        try c.encodeOrNull(remaining, forKey: .remaining)
        try c.encode(matched, forKey: .matched)
        try c.encode(fired, forKey: .fired)
    }
}

extension KeyedEncodingContainer {
    /// The value, or `null`: the API writes absent members out, as its examples show.
    mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
