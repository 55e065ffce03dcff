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
        // Digits by hand: `String(format:)` cost a listing tens of thousands
        // of instructions an object.
        var out: [UInt8] = []
        out.reserveCapacity(24)
        func digits(_ value: Int, _ width: Int, then separator: UInt8?) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var v = value
            if v >= divisor * 10 || v < 0 {  // wider than `width` (a year past 9999): all its digits, as %04d prints
                out += Array(String(v).utf8)
            } else {
                while divisor > 0 {
                    out.append(0x30 + UInt8(v / divisor))
                    v %= divisor
                    divisor /= 10
                }
            }
            if let separator { out.append(separator) }
        }
        digits(Int(parts.tm_year) + 1900, 4, then: 0x2D)
        digits(Int(parts.tm_mon) + 1, 2, then: 0x2D)
        digits(Int(parts.tm_mday), 2, then: 0x54)
        digits(Int(parts.tm_hour), 2, then: 0x3A)
        digits(Int(parts.tm_min), 2, then: 0x3A)
        digits(Int(parts.tm_sec), 2, then: 0x2E)
        digits(Int(millis), 3, then: 0x5A)
        return String(decoding: out, as: UTF8.self)
    }
}
