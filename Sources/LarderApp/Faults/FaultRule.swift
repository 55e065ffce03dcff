import LarderHTTP
import LarderRouting
import LarderJSON
import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// One rule of `PUT /faults`, validated: which requests it matches (a
/// prefix, methods), what it does to them (a delay, a status, a fault of
/// the network: `drop`, `truncate`, `bytesPerSecond`), how often
/// (probability) and how many times (count). Immutable; the counters live
/// in `FaultBook`.
///
/// `prefix` not starting with `/` is a key prefix: it matches
/// `/store/<key>` (and listings `/store/<prefix>/`) whose percent-decoded
/// key starts with it, byte for byte, as S3 prefixes do (`users` matches
/// `users/1` and `users2`; `""` every store request). A prefix starting
/// with `/` is compared with the path as sent (no query), so `/events`,
/// `/healthz` or `/` (everything) can be faulted too.
struct FaultRule: Sendable {
    enum Target: Sendable {
        /// Decoded key bytes a store request's key must start with.
        case key([UInt8])
        /// Raw path text the request path must start with.
        case path(String)
    }

    /// The `id` the client gave, if any (the book names the others).
    let id: String?
    let prefix: String
    let target: Target
    /// What a rule does to the connection (at most one per rule: the
    /// connection acts out one `HTTPNetworkFault` per answer).
    enum NetworkEffect: Sendable, Equatable {
        /// Reset before the request is handled: nothing read, nothing stored.
        case dropBefore
        /// Handle the request in full, then reset instead of answering.
        case dropAfter
        /// Send the head and this many body bytes, then close.
        case truncate(Int64)
        /// Send the answer's body and read the request's at this rate.
        case pace(bytesPerSecond: Int)
    }

    /// Upper-case method names; nil: every method.
    let methods: [String]?
    let delayMs: Int
    let jitterMs: Int
    /// The status to answer with instead of running the route; nil: the
    /// route runs (and is answered late when there is a delay).
    let status: Int?
    let probability: Double
    /// Times the rule may fire; nil: no limit.
    let count: Int?
    let network: NetworkEffect?

    static let knownMethods = ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS"]
    static let fields = ["id", "prefix", "methods", "delayMs", "jitterMs", "status", "drop", "truncate", "bytesPerSecond",
                         "probability", "count"]
    /// A terabyte: more than any answer a test would cut.
    static let maxTruncate: Int64 = 1 << 40
    /// 1 GiB/s: a "slow link" faster than that is no fault.
    static let maxBytesPerSecond = 1 << 30
    /// Ten minutes: longer than any client timeout worth testing.
    static let maxDelayMs = 600_000
    /// A fault is a failure: client or server errors only (a 1xx, 2xx or 3xx
    /// "fault" would be a different answer, not a failure to answer).
    static let statuses = 400...599

    /// Validates one element of the rule array; `position` (1-based) names
    /// it in error messages.
    init(json: JSONValue, position: Int) throws(HTTPError) {
        func invalid(_ why: String) -> HTTPError {
            HTTPError(.badRequest, .invalidRule, "rule \(position): \(why)")
        }
        guard case .object(let members) = json else { throw invalid("a rule is a JSON object") }
        var id: String?
        var prefix: String?
        var methods: [String]?
        var delayMs = 0, jitterMs = 0
        var status: Int?
        var probability = 1.0
        var count: Int?
        var drop: NetworkEffect?
        var truncate: Int64?
        var bytesPerSecond: Int?
        for (key, value) in members {
            switch key {
            case "id":
                guard case .string(let s) = value, (1...64).contains(s.utf8.count),
                      s.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                    throw invalid("id must be 1 to 64 visible ASCII characters (it is sent in the Larder-Fault header)")
                }
                id = s
            case "prefix":
                guard case .string(let s) = value else { throw invalid("prefix must be a string") }
                prefix = s
            case "methods":
                guard case .array(let items) = value, !items.isEmpty else {
                    throw invalid("methods must be a non-empty array of method names (leave it out for every method)")
                }
                var names: [String] = []
                for item in items {
                    guard case .string(let s) = item, Self.knownMethods.contains(s.uppercased()) else {
                        throw invalid("methods may only name \(Self.knownMethods.joined(separator: ", "))")
                    }
                    if !names.contains(s.uppercased()) { names.append(s.uppercased()) }
                }
                methods = names
            case "delayMs":
                guard let n = Self.integer(value), (0...Self.maxDelayMs).contains(n) else {
                    throw invalid("delayMs must be an integer from 0 to \(Self.maxDelayMs)")
                }
                delayMs = n
            case "jitterMs":
                guard let n = Self.integer(value), (0...Self.maxDelayMs).contains(n) else {
                    throw invalid("jitterMs must be an integer from 0 to \(Self.maxDelayMs)")
                }
                jitterMs = n
            case "status":
                guard let n = Self.integer(value), Self.statuses.contains(n) else {
                    throw invalid("status must be an integer from \(Self.statuses.lowerBound) to \(Self.statuses.upperBound)")
                }
                status = n
            case "probability":
                guard case .number(let text) = value, let p = Double(text), (0...1).contains(p) else {
                    throw invalid("probability must be a number from 0 to 1")
                }
                probability = p
            case "count":
                guard let n = Self.integer(value), n >= 1 else {
                    throw invalid("count must be an integer of at least 1 (leave it out for no limit)")
                }
                count = n
            case "drop":
                guard case .string(let s) = value, s == "before" || s == "after" else {
                    throw invalid("drop must be \"before\" (reset before the request is handled) or \"after\" (handled, then reset)")
                }
                drop = s == "before" ? .dropBefore : .dropAfter
            case "truncate":
                guard let n = Self.integer(value), n >= 0, Int64(n) <= Self.maxTruncate else {
                    throw invalid("truncate must be an integer from 0 to \(Self.maxTruncate) (body bytes sent before the connection closes)")
                }
                truncate = Int64(n)
            case "bytesPerSecond":
                guard let n = Self.integer(value), (1...Self.maxBytesPerSecond).contains(n) else {
                    throw invalid("bytesPerSecond must be an integer from 1 to \(Self.maxBytesPerSecond)")
                }
                bytesPerSecond = n
            default:
                throw invalid("unknown field \(JSON.quote(key)); a rule has \(Self.fields.joined(separator: ", "))")
            }
        }
        guard let prefix else { throw invalid("prefix is required (\"\" for every key, \"/\" for every path)") }
        if drop != nil {
            if status != nil { throw invalid("drop and status cannot be combined: a dropped request gets no answer, so no status") }
            if truncate != nil || bytesPerSecond != nil {
                throw invalid("drop cannot be combined with truncate or bytesPerSecond: a dropped request has no answer to shape")
            }
        }
        if truncate != nil && bytesPerSecond != nil {
            throw invalid("truncate and bytesPerSecond cannot be combined: one network fault per rule")
        }
        self.id = id
        self.prefix = prefix
        self.target = prefix.hasPrefix("/") ? .path(prefix) : .key(Array(prefix.utf8))
        self.methods = methods
        self.delayMs = delayMs
        self.jitterMs = jitterMs
        self.status = status
        self.probability = probability
        self.count = count
        self.network = drop ?? truncate.map { .truncate($0) } ?? bytesPerSecond.map { .pace(bytesPerSecond: $0) }
    }

    /// `drop` as `GET /faults` shows it.
    var drop: String? {
        switch network {
        case .dropBefore?: "before"
        case .dropAfter?: "after"
        default: nil
        }
    }

    var truncate: Int64? { if case .truncate(let n)? = network { n } else { nil } }
    var bytesPerSecond: Int? { if case .pace(let b)? = network { b } else { nil } }

    /// A JSON number that is a whole number (`200`, `2e2`, `200.0`), else nil.
    private static func integer(_ value: JSONValue) -> Int? {
        guard case .number(let text) = value else { return nil }
        if let n = Int(text) { return n }
        guard let d = Double(text), d.rounded() == d, abs(d) < 1e15 else { return nil }
        return Int(d)
    }

    /// Whether the rule is about this request. `key` gives the request's
    /// decoded key bytes (nil when it is not a store request); it is only
    /// called for key rules, so the decoding is done once and only if needed.
    func matches(method: String, path: Substring, key: () -> [UInt8]?) -> Bool {
        if let methods, !methods.contains(method) { return false }
        switch target {
        case .path(let p):
            return path.hasPrefix(p)
        case .key(let p):
            guard let k = key() else { return false }
            return k.starts(with: p)
        }
    }

    /// The decoded key of a store request (`/store` and `/store/...`; an
    /// undecodable key is compared as sent), nil for other paths.
    static func storeKey(of path: Substring) -> [UInt8]? {
        guard path.hasPrefix("/store") else { return nil }
        let rest = path.dropFirst("/store".count)
        if rest.isEmpty { return [] }
        guard rest.hasPrefix("/") else { return nil }
        let encoded = rest.dropFirst()
        guard encoded.utf8.contains(UInt8(ascii: "%")) else { return Array(encoded.utf8) }
        return (try? StoreKey.percentDecode(encoded)) ?? Array(encoded.utf8)
    }
}
