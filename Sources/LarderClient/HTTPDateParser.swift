import Foundation
import LarderModel

/// Reads the HTTP dates of `Last-Modified` and `Larder-Expires`
/// (IMF-fixdate, RFC 9110 section 5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`).
///
/// Hand-written rather than a `DateFormatter`: it is `Sendable` without a
/// lock and does not depend on the locale.
enum HTTPDateParser {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The moment `text` names, or nil when it is not an IMF-fixdate.
    static func parse(_ text: String) -> Timestamp? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT",
              let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])).map({ $0 + 1 }),
              // Four digits, as IMF-fixdate has: a huge year from a broken
              // header would overflow the nanosecond arithmetic below (a trap).
              let year = Int(parts[3]), (1...9999).contains(year) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let seconds = CivilCalendar.daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day)) * 86_400
            + Int64(hour * 3600 + minute * 60 + second)
        // Int64 nanoseconds end in 2262: a later (or much earlier) date is
        // not one a `Timestamp` can hold, so it is nil rather than a trap.
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? nil : Timestamp(nanoseconds: nanoseconds)
    }
}
