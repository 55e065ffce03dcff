/// A duration as a clock move spells it (`POST /clock {"advance": "90s"}`,
/// the helpers' `clock.advance("1h")`): a whole number and a unit, `ms`,
/// `s`, `m`, `h` or `d`; several may follow each other (`"1h30m"`).
public enum ClockDuration {
    /// Ten years: far enough for any test, and no overflow of nanoseconds.
    public static let maxMilliseconds: Int64 = 10 * 366 * 86_400_000

    /// Nanoseconds of `text`; nil when it is not a duration, or past `maxMilliseconds`.
    public static func nanos(_ text: String) -> Int64? {
        var total: Int64 = 0
        var rest = Substring(text)
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 12, let n = Int64(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            let unitMs: Int64
            if rest.hasPrefix("ms") {
                unitMs = 1
                rest = rest.dropFirst(2)
            } else {
                switch rest.first {
                case "s": unitMs = 1000
                case "m": unitMs = 60_000
                case "h": unitMs = 3_600_000
                case "d": unitMs = 86_400_000
                default: return nil
                }
                rest = rest.dropFirst()
            }
            let (ms, overflow) = n.multipliedReportingOverflow(by: unitMs)
            guard !overflow else { return nil }
            total += ms
            guard total <= maxMilliseconds else { return nil }
        }
        return total * 1_000_000
    }
}
