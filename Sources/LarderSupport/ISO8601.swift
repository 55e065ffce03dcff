#if canImport(Glibc)
import Glibc
#endif

/// `2026-11-20T10:00:00Z` (listings) and `2026-11-20T10:00:00.123Z` (log
/// lines): the one ISO 8601 formatter.
public enum ISO8601 {
    public static func format(nanos: Int64, milliseconds: Bool = false) -> String {
        var t = time_t(nanos / 1_000_000_000)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        func pad(_ v: Int32, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        var text = "\(pad(tmv.tm_year + 1900, 4))-\(pad(tmv.tm_mon + 1, 2))-\(pad(tmv.tm_mday, 2))T"
            + "\(pad(tmv.tm_hour, 2)):\(pad(tmv.tm_min, 2)):\(pad(tmv.tm_sec, 2))"
        if milliseconds { text += "." + pad(Int32(nanos % 1_000_000_000 / 1_000_000), 3) }
        return text + "Z"
    }
}
