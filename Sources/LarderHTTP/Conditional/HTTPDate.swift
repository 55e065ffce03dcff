import LarderModel
import LarderSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP-date formatting and parsing (RFC 9110 section 5.6.7), with the current
/// second's `Date` header cached so a response costs no formatting.
///
/// Formatting always produces the preferred IMF-fixdate form. Parsing accepts
/// all three forms a recipient must understand: IMF-fixdate, the obsolete
/// RFC 850 form and the ANSI C `asctime()` form. Dates are seconds since
/// 1970-01-01T00:00:00Z, always in GMT/UTC.
public enum HTTPDate {
    private static let cache = Locked<(second: Int, bytes: [UInt8])>((-1, []))
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// "Sun, 06 Nov 1994 08:49:37 GMT" for the current second, as bytes.
    static func nowBytes() -> [UInt8] {
        let now = time(nil)
        return cache.withLock { c in
            if c.second != now {
                c = (now, Array(formatUncached(Int64(now)).utf8))
            }
            return c.bytes
        }
    }

    /// The last date formatted: a hot value's Last-Modified repeats.
    private static let lastFormatted = Locked<(seconds: Int64, text: String)>((.min, ""))

    /// Formats `seconds` since 1970 as an IMF-fixdate, e.g.
    /// `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(secondsSince1970 seconds: Int64) -> String {
        if let hit = lastFormatted.withLock({ $0.seconds == seconds ? $0.text : nil }) { return hit }
        let text = formatUncached(seconds)
        lastFormatted.withLock { $0 = (seconds, text) }
        return text
    }

    private static func formatUncached(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(days[Int(tmv.tm_wday)]), \(two(tmv.tm_mday)) \(months[Int(tmv.tm_mon)]) \(tmv.tm_year + 1900) "
            + "\(two(tmv.tm_hour)):\(two(tmv.tm_min)):\(two(tmv.tm_sec)) GMT"
    }

    // MARK: - Parsing

    /// Parses an HTTP-date in any of the three RFC 9110 section 5.6.7 forms:
    ///
    /// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
    /// - obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`
    /// - obsolete asctime: `Sun Nov  6 08:49:37 1994`
    ///
    /// A two-digit RFC 850 year is resolved against the current clock; see
    /// ``parse(_:now:)``. Names are case-sensitive, as in RFC 9110's grammar.
    /// The day name must be a real one but is not checked against the date:
    /// it is redundant, and senders that get it wrong still mean the date.
    ///
    /// - Returns: seconds since 1970, or nil when `text` is not a valid
    ///   HTTP-date (unknown day or month name, wrong case, wrong spacing, a
    ///   field out of range such as hour 25 or February 30, or trailing data
    ///   such as a second date in a list).
    public static func parse(_ text: String) -> Int64? {
        parse(text, now: Int64(time(nil)))
    }

    /// Parses an HTTP-date like ``parse(_:)``, resolving a two-digit RFC 850
    /// year relative to `now` (seconds since 1970) instead of the clock, so the
    /// rule can be tested and is deterministic for a caller that pins the time.
    ///
    /// RFC 9110 section 5.6.7: a two-digit year that "appears to be more than
    /// 50 years in the future" means the most recent past year with the same
    /// last two digits. We compare calendar years: the result is the latest
    /// year ending in those digits that is at most `currentYear + 50`.
    public static func parse(_ text: String, now: Int64) -> Int64? {
        // Header values normally arrive with OWS trimmed; trimming again keeps
        // the parser usable on raw field values.
        let bytes = trimmedOWS(Array(text.utf8))
        guard bytes.count >= 4 else { return nil }
        // The three forms differ at the fourth byte: IMF-fixdate has the comma
        // after a three-letter day name, asctime a space, RFC 850 a longer
        // day name.
        switch bytes[3] {
        case UInt8(ascii: ","): return parseIMFFixdate(bytes)
        case UInt8(ascii: " "): return parseAsctime(bytes)
        default: return parseRFC850(bytes, now: now)
        }
    }

    private static let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let dayBytes = days.map { Array($0.utf8) }
    private static let longDayBytes = longDays.map { Array($0.utf8) }
    private static let monthBytes = months.map { Array($0.utf8) }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` — fixed width, 29 bytes.
    private static func parseIMFFixdate(_ b: [UInt8]) -> Int64? {
        guard b.count == 29,
              isDayName(b, 0),
              b[3] == UInt8(ascii: ","), b[4] == UInt8(ascii: " "),
              let day = digits(b, 5, 2), b[7] == UInt8(ascii: " "),
              let month = monthIndex(b, 8), b[11] == UInt8(ascii: " "),
              let year = digits(b, 12, 4), b[16] == UInt8(ascii: " "),
              let (h, m, s) = timeOfDay(b, 17), b[25] == UInt8(ascii: " "),
              matches(b, 26, "GMT") else { return nil }
        return seconds(year: year, month: month, day: day, hour: h, minute: m, second: s)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT` — a full day name, then 24 fixed bytes.
    private static func parseRFC850(_ b: [UInt8], now: Int64) -> Int64? {
        guard let comma = b.firstIndex(of: UInt8(ascii: ",")),
              longDayBytes.contains(where: { $0[...] == b[..<comma] }) else { return nil }
        let p = comma  // offsets below are relative to the comma
        guard b.count == p + 24,
              b[p + 1] == UInt8(ascii: " "),
              let day = digits(b, p + 2, 2), b[p + 4] == UInt8(ascii: "-"),
              let month = monthIndex(b, p + 5), b[p + 8] == UInt8(ascii: "-"),
              let yy = digits(b, p + 9, 2), b[p + 11] == UInt8(ascii: " "),
              let (h, m, s) = timeOfDay(b, p + 12), b[p + 20] == UInt8(ascii: " "),
              matches(b, p + 21, "GMT") else { return nil }
        let year = resolveTwoDigitYear(yy, now: now)
        return seconds(year: year, month: month, day: day, hour: h, minute: m, second: s)
    }

    /// `Sun Nov  6 08:49:37 1994` — fixed width, 24 bytes; the day of month is
    /// two digits or a space and one digit.
    private static func parseAsctime(_ b: [UInt8]) -> Int64? {
        guard b.count == 24,
              isDayName(b, 0), b[3] == UInt8(ascii: " "),
              let month = monthIndex(b, 4), b[7] == UInt8(ascii: " ") else { return nil }
        let day: Int64
        if b[8] == UInt8(ascii: " ") {
            guard let d = digits(b, 9, 1) else { return nil }
            day = d
        } else {
            guard let d = digits(b, 8, 2) else { return nil }
            day = d
        }
        guard b[10] == UInt8(ascii: " "),
              let (h, m, s) = timeOfDay(b, 11), b[19] == UInt8(ascii: " "),
              let year = digits(b, 20, 4) else { return nil }
        return seconds(year: year, month: month, day: day, hour: h, minute: m, second: s)
    }

    /// RFC 9110 5.6.7: more than 50 years in the future means the previous
    /// century. Equivalently: the latest year with these last two digits that
    /// is not after `currentYear + 50`.
    static func resolveTwoDigitYear(_ yy: Int64, now: Int64) -> Int64 {
        let limit = civilYear(secondsSince1970: now) + 50
        let century = limit - floorMod(limit, 100)
        let candidate = century + yy
        return candidate > limit ? candidate - 100 : candidate
    }

    // MARK: Field helpers

    /// Day names are case-sensitive in RFC 9110 (`%s"Mon"`), so compare bytes.
    private static func isDayName(_ b: [UInt8], _ at: Int) -> Bool {
        dayBytes.contains { $0[...] == b[at..<(at + 3)] }
    }

    /// Month names are case-sensitive too; returns 1...12.
    private static func monthIndex(_ b: [UInt8], _ at: Int) -> Int64? {
        guard at + 3 <= b.count else { return nil }
        return monthBytes.firstIndex { $0[...] == b[at..<(at + 3)] }.map { Int64($0) + 1 }
    }

    /// `hh:mm:ss`, 8 bytes. Hour 0-23, minute 0-59, second 0-60: 60 is kept for
    /// a leap second (RFC 5322 allows it) and folds into the next minute.
    private static func timeOfDay(_ b: [UInt8], _ at: Int) -> (Int64, Int64, Int64)? {
        guard let h = digits(b, at, 2), b[at + 2] == UInt8(ascii: ":"),
              let m = digits(b, at + 3, 2), b[at + 5] == UInt8(ascii: ":"),
              let s = digits(b, at + 6, 2),
              h <= 23, m <= 59, s <= 60 else { return nil }
        return (h, m, s)
    }

    /// Exactly `count` ASCII digits at `at` (no sign, no spaces).
    private static func digits(_ b: [UInt8], _ at: Int, _ count: Int) -> Int64? {
        guard at >= 0, at + count <= b.count else { return nil }
        var value: Int64 = 0
        for i in at..<(at + count) {
            let c = b[i]
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(c - UInt8(ascii: "0"))
        }
        return value
    }

    private static func matches(_ b: [UInt8], _ at: Int, _ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard at + count <= b.count else { return false }
        return literal.withUTF8Buffer { $0.elementsEqual(b[at..<(at + count)]) }
    }

    /// Drops leading and trailing SP/HTAB; returns a fresh array so the
    /// fixed offsets above start at 0.
    private static func trimmedOWS(_ b: [UInt8]) -> [UInt8] {
        var lo = b.startIndex, hi = b.endIndex
        while lo < hi, b[lo] == 0x20 || b[lo] == 0x09 { lo += 1 }
        while hi > lo, b[hi - 1] == 0x20 || b[hi - 1] == 0x09 { hi -= 1 }
        return Array(b[lo..<hi])
    }

    // MARK: Calendar arithmetic

    /// Validates the fields and converts them to seconds since 1970. Done by
    /// hand rather than with `timegm`, which silently normalises February 30
    /// to March 2 instead of rejecting it.
    private static func seconds(year: Int64, month: Int64, day: Int64,
                                hour: Int64, minute: Int64, second: Int64) -> Int64? {
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month) else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second
    }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        CivilCalendar.daysInMonth(year: year, month: month)
    }

    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        CivilCalendar.daysFromCivil(year: year, month: month, day: day)
    }

    /// The Gregorian year containing `seconds`.
    private static func civilYear(secondsSince1970 seconds: Int64) -> Int64 {
        CivilCalendar.civil(secondsSince1970: seconds).year
    }

    private static func floorMod(_ a: Int64, _ b: Int64) -> Int64 {
        CivilCalendar.floorMod(a, b)
    }
}
