import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// IMF-fixdate formatting and parsing (RFC 9110 5.6.7), with the current
/// second's `Date` header cached so a response costs no formatting.
public enum HTTPDate {
    private static let cache = Mutex<(second: Int, bytes: [UInt8])>((-1, []))
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
    private static let lastFormatted = Mutex<(seconds: Int64, text: String)>((.min, ""))

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

    /// Parses IMF-fixdate; nil for anything else.
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int32(parts[1]),
              let month = months.firstIndex(of: String(parts[2])), let year = Int32(parts[3]) else { return nil }
        let hms = parts[4].split(separator: ":")
        guard hms.count == 3, let h = Int32(hms[0]), let m = Int32(hms[1]), let s = Int32(hms[2]) else { return nil }
        var tmv = tm()
        tmv.tm_year = year - 1900
        tmv.tm_mon = Int32(month)
        tmv.tm_mday = day
        tmv.tm_hour = h
        tmv.tm_min = m
        tmv.tm_sec = s
        return Int64(timegm(&tmv))
    }
}
