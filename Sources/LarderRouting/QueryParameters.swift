import LarderHTTP
import LarderSupport

/// `a=1&b=x%2Fy` → ["a": "1", "b": "x/y"]. `+` stays `+` (RFC 3986; send
/// `%20` for a space). The first of repeated names wins.
public struct QueryParameters {
    private var values: [String: String] = [:]

    public init(_ query: Substring?) throws(HTTPError) {
        guard let query, !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else {
                throw HTTPError(.badRequest, .invalidArgument, "the query has a malformed percent escape")
            }
            let value = parts.count > 1 ? Self.decode(parts[1]) : ""
            guard let value else {
                throw HTTPError(.badRequest, .invalidArgument, "the query parameter '\(name)' has a malformed percent escape")
            }
            if values[name] == nil { values[name] = value }
        }
    }

    public subscript(name: String) -> String? { values[name] }

    private static func decode(_ s: Substring) -> String? {
        PercentDecoding.decodeString(s)
    }

    /// An integer parameter within bounds, nil when absent.
    public func optionalInteger(_ name: String, range: ClosedRange<Int>) throws(HTTPError) -> Int? {
        guard values[name] != nil else { return nil }
        return try integer(name, default: 0, range: range)
    }

    /// A yes/no parameter: `1`, `true` or empty (present) are yes.
    public func flag(_ name: String) throws(HTTPError) -> Bool {
        guard let text = values[name] else { return false }
        switch text.lowercased() {
        case "", "1", "true", "yes": return true
        case "0", "false", "no": return false
        default: throw HTTPError(.badRequest, .invalidArgument, "'\(name)' must be 1 or 0")
        }
    }

    /// An integer parameter within bounds, or a 400 that says what is wrong.
    public func integer(_ name: String, default value: Int, range: ClosedRange<Int>, clampUpper: Bool = false) throws(HTTPError) -> Int {
        guard let text = values[name] else { return value }
        guard let n = Int(text), n >= range.lowerBound, clampUpper || n <= range.upperBound else {
            throw HTTPError(.badRequest, .invalidArgument,
                            "'\(name)' must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return min(n, range.upperBound)
    }
}
