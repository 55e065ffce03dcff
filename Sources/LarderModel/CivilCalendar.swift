/// Proleptic Gregorian calendar arithmetic on days since 1970-01-01, by
/// hand rather than with `timegm` (which silently normalises February 30
/// to March 2) and without Foundation: Howard Hinnant's `days_from_civil`
/// and `civil_from_days`, counting years from March so a leap day falls
/// last. The one copy: `HTTPDate` (server), `HTTPDateParser` (client) and
/// SigV4's `X-Amz-Date` all read dates with it.
package enum CivilCalendar {
    /// Days since 1970-01-01 of `year`-`month`-`day` (month 1...12). Fields
    /// are not checked: a caller that must reject February 30 asks
    /// ``daysInMonth(year:month:)`` first.
    package static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date of the day `days` after 1970-01-01 (inverse of ``daysFromCivil(year:month:day:)``).
    package static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The date of the day holding `seconds` since 1970 (earlier instants round down).
    package static func civil(secondsSince1970 seconds: Int64) -> (year: Int64, month: Int64, day: Int64) {
        civilFromDays(floorDiv(seconds, 86_400))
    }

    package static func isLeapYear(_ y: Int64) -> Bool {
        (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
    }

    /// 28...31 for month 1...12 of `year`.
    package static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Division rounding toward negative infinity (`/` truncates toward zero).
    package static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// The remainder of ``floorDiv(_:_:)``: the sign of `b`.
    package static func floorMod(_ a: Int64, _ b: Int64) -> Int64 {
        a - floorDiv(a, b) * b
    }
}
