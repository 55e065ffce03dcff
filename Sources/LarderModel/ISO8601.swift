#if canImport(Glibc)
import Glibc
#endif

/// `2026-11-20T10:00:00Z` (listings) and `2026-11-20T10:00:00.123Z` (log
/// lines, snapshots): the one ISO 8601 formatter, and its parser.
public enum ISO8601 {
    /// `nanos` since 1970 as `YYYY-MM-DDTHH:MM:SSZ`, with `.mmm` before the
    /// `Z` when `milliseconds`. The one formatter: listings, log lines,
    /// snapshots and S3's XML (`S3Time`). A year past 9999 prints all its
    /// digits.
    public static func format(nanos: Int64, milliseconds: Bool = false) -> String {
        var t = time_t(nanos / 1_000_000_000)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        // Digits by hand: `String(format:)` or string interpolation cost a
        // listing tens of thousands of instructions an object.
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(Int(tmv.tm_year) + 1900, width: 4, then: 0x2D, to: &out)
        append(Int(tmv.tm_mon) + 1, width: 2, then: 0x2D, to: &out)
        append(Int(tmv.tm_mday), width: 2, then: 0x54, to: &out)
        append(Int(tmv.tm_hour), width: 2, then: 0x3A, to: &out)
        append(Int(tmv.tm_min), width: 2, then: 0x3A, to: &out)
        if milliseconds {
            append(Int(tmv.tm_sec), width: 2, then: 0x2E, to: &out)
            append(Int(nanos % 1_000_000_000 / 1_000_000), width: 3, then: 0x5A, to: &out)
        } else {
            append(Int(tmv.tm_sec), width: 2, then: 0x5A, to: &out)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` in decimal, zeros before it up to `width` characters (a
    /// minus sign counts as one), then `separator`.
    private static func append(_ value: Int, width: Int, then separator: UInt8, to out: inout [UInt8]) {
        if value < 0 {
            let text = Array(String(value).utf8)
            for _ in text.count..<max(text.count, width) { out.append(0x30) }
            out += text
        } else {
            var count = 1, divisor = 1
            while value / divisor >= 10 { divisor *= 10; count += 1 }
            for _ in count..<max(count, width) { out.append(0x30) }
            var v = value
            while divisor > 0 {
                out.append(0x30 + UInt8(v / divisor))
                v %= divisor
                divisor /= 10
            }
        }
        out.append(separator)
    }

    /// Unix time in nanoseconds of an RFC 3339 date-time:
    /// `YYYY-MM-DDTHH:MM:SS`, an optional fraction (up to nanoseconds), then
    /// `Z` or an offset `±HH:MM`. `t` and `z` are accepted as RFC 3339
    /// allows; anything else is nil.
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        var pos = 0
        func number(_ digits: Int) -> Int? {
            guard pos + digits <= b.count else { return nil }
            var v = 0
            for i in pos..<(pos + digits) {
                guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            pos += digits
            return v
        }
        func expect(_ c: Character) -> Bool {
            guard pos < b.count, b[pos] == c.asciiValue! else { return false }
            pos += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              pos < b.count, b[pos] == UInt8(ascii: "T") || b[pos] == UInt8(ascii: "t") else { return nil }
        pos += 1
        guard let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var fraction: Int64 = 0
        if expect(".") {
            var digits = 0
            while pos < b.count, b[pos] >= 0x30 && b[pos] <= 0x39 {
                if digits < 9 { fraction = fraction * 10 + Int64(b[pos] - 0x30) }
                digits += 1
                pos += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 9)..<9 { fraction *= 10 }
        }
        var offsetSeconds = 0
        guard pos < b.count else { return nil }
        switch b[pos] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            pos += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = b[pos] == UInt8(ascii: "-") ? -1 : 1
            pos += 1
            guard let h = number(2), expect(":"), let m = number(2), h < 24, m < 60 else { return nil }
            offsetSeconds = sign * (h * 3600 + m * 60)
        default:
            return nil
        }
        guard pos == b.count else { return nil }
        var tmv = tm()
        tmv.tm_year = Int32(year - 1900)
        tmv.tm_mon = Int32(month - 1)
        tmv.tm_mday = Int32(day)
        tmv.tm_hour = Int32(hour)
        tmv.tm_min = Int32(minute)
        tmv.tm_sec = Int32(second)
        let seconds = Int64(timegm(&tmv)) - Int64(offsetSeconds)
        // timegm normalises (Feb 30 becomes Mar 2): such a date is not one.
        var check = time_t(seconds + Int64(offsetSeconds))
        var back = tm()
        gmtime_r(&check, &back)
        guard back.tm_mday == Int32(day), back.tm_mon == Int32(month - 1) else { return nil }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        let (nanos, past) = product.addingReportingOverflow(fraction)
        return past ? nil : nanos
    }
}
