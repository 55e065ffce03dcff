import Foundation

/// S3's timestamps in XML: ISO 8601 in UTC with milliseconds
/// (`2026-01-02T03:04:05.678Z`).
enum S3Time {
    static func iso8601(nanos: Int64) -> String {
        let seconds = nanos / 1_000_000_000
        let millis = (nanos % 1_000_000_000) / 1_000_000
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis))
    }
}
