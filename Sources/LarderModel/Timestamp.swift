import FoundationEssentials

/// A moment as Unix time in nanoseconds, the store's own precision. On the
/// wire it is an RFC 3339 date-time in UTC (`2026-11-20T10:00:00Z`: whole
/// seconds, as `Last-Modified` has them); decoding accepts any RFC 3339
/// date-time, with a fraction and an offset.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// The moment of `date`, clamped to what 64-bit nanoseconds hold (the
    /// years 1677 to 2262; `Date.distantFuture` is past it).
    public init(_ date: Date) {
        let nanos = (date.timeIntervalSince1970 * 1e9).rounded()
        self.nanoseconds = nanos >= 9.2e18 ? .max : nanos <= -9.2e18 ? .min : Int64(nanos)
    }

    /// The moment as a `Date` (to about a microsecond).
    public var date: Date { Date(timeIntervalSince1970: Double(nanoseconds) / 1e9) }

    public var description: String { ISO8601.format(nanos: nanoseconds) }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.nanoseconds < b.nanoseconds }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let nanos = ISO8601.parse(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not an RFC 3339 date-time")
        }
        self.nanoseconds = nanos
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(ISO8601.format(nanos: nanoseconds))
    }
}
