import LarderHTTP
import LarderJSON
import LarderStorage
import LarderValueFile

/// One rule of `PUT /faults`, validated: which requests it matches (a
/// prefix, methods), what it does to them (a delay, a status), how often
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

    static let knownMethods = ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS"]
    static let fields = ["id", "prefix", "methods", "delayMs", "jitterMs", "status", "probability", "count"]
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
            default:
                throw invalid("unknown field \(JSON.quote(key)); a rule has \(Self.fields.joined(separator: ", "))")
            }
        }
        guard let prefix else { throw invalid("prefix is required (\"\" for every key, \"/\" for every path)") }
        self.id = id
        self.prefix = prefix
        self.target = prefix.hasPrefix("/") ? .path(prefix) : .key(Array(prefix.utf8))
        self.methods = methods
        self.delayMs = delayMs
        self.jitterMs = jitterMs
        self.status = status
        self.probability = probability
        self.count = count
    }

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
