#if canImport(Glibc)
import Glibc
#endif
import LarderModel
import Testing

/// `CivilCalendar`, the one copy of the days-since-1970 arithmetic that
/// `HTTPDate`, the client's `HTTPDateParser` and SigV4's `X-Amz-Date` read with.
@Suite struct CivilCalendarTests {
    @Test func knownDays() {
        #expect(CivilCalendar.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilCalendar.daysFromCivil(year: 1969, month: 12, day: 31) == -1)
        #expect(CivilCalendar.daysFromCivil(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilCalendar.daysFromCivil(year: 1994, month: 11, day: 6) * 86_400 == 784_080_000)
        // IMF-fixdate's four-digit years: the first and last day.
        #expect(CivilCalendar.daysFromCivil(year: 1, month: 1, day: 1) == -719_162)
        #expect(CivilCalendar.daysFromCivil(year: 9999, month: 12, day: 31) == 2_932_896)
        #expect(CivilCalendar.daysFromCivil(year: 0, month: 3, day: 1) == -719_468)
    }

    @Test func agreesWithGmtimeAndRoundTrips() {
        // 1900 through 2400 day by day: 1900 and 2100 are not leap years, 2000 and 2400 are.
        let first = CivilCalendar.daysFromCivil(year: 1900, month: 1, day: 1)
        let last = CivilCalendar.daysFromCivil(year: 2400, month: 12, day: 31)
        var t = time_t(first * 86_400)
        var tmv = tm()
        for days in stride(from: first, through: last, by: 1) {
            t = time_t(days * 86_400)
            gmtime_r(&t, &tmv)
            let (y, m, d) = (Int64(tmv.tm_year) + 1900, Int64(tmv.tm_mon) + 1, Int64(tmv.tm_mday))
            guard CivilCalendar.daysFromCivil(year: y, month: m, day: d) == days,
                  CivilCalendar.civilFromDays(days) == (y, m, d) else {
                Issue.record("day \(days): \(y)-\(m)-\(d)")
                return
            }
        }
        for days: Int64 in [-719_468, -719_162, 0, 2_932_896, 2_932_897] {
            let c = CivilCalendar.civilFromDays(days)
            #expect(CivilCalendar.daysFromCivil(year: c.year, month: c.month, day: c.day) == days)
        }
        #expect(CivilCalendar.civilFromDays(2_932_896) == (9999, 12, 31))
        #expect(CivilCalendar.civilFromDays(2_932_897) == (10000, 1, 1))
    }

    @Test func secondsRoundDown() {
        #expect(CivilCalendar.civil(secondsSince1970: 0) == (1970, 1, 1))
        #expect(CivilCalendar.civil(secondsSince1970: -1) == (1969, 12, 31))
        #expect(CivilCalendar.civil(secondsSince1970: 86_399) == (1970, 1, 1))
        #expect(CivilCalendar.civil(secondsSince1970: 7_258_118_399) == (2199, 12, 31))
        #expect(CivilCalendar.civil(secondsSince1970: 7_258_118_400) == (2200, 1, 1))
    }

    @Test func leapYearsAndMonthLengths() {
        for (year, leap) in [(1900, false), (1970, false), (1972, true), (2000, true), (2024, true),
                             (2100, false), (2199, false), (2400, true), (9996, true), (9999, false)] as [(Int64, Bool)] {
            #expect(CivilCalendar.isLeapYear(year) == leap, "\(year)")
            #expect(CivilCalendar.daysInMonth(year: year, month: 2) == (leap ? 29 : 28), "\(year)")
        }
        #expect((1...12).map { CivilCalendar.daysInMonth(year: 2023, month: $0) } == [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    }

    @Test func floorDivisionRoundsDown() {
        #expect(CivilCalendar.floorDiv(7, 2) == 3)
        #expect(CivilCalendar.floorDiv(-7, 2) == -4)
        #expect(CivilCalendar.floorDiv(-8, 2) == -4)
        #expect(CivilCalendar.floorMod(-7, 100) == 93)
        #expect(CivilCalendar.floorMod(2076, 100) == 76)
    }
}

/// `ISO8601.format`'s digits, written by hand since it became S3's formatter too.
@Suite struct ISO8601FormatTests {
    /// The formatter's output before it wrote digits by hand.
    static func interpolated(nanos: Int64, milliseconds: Bool) -> String {
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

    @Test func sameTextAsBefore() {
        let second: Int64 = 1_000_000_000
        let instants: [Int64] = [0, 1, 999_999_999, 1_000_000, 78_999_999, 1_369_353_600 * second,
                                 951_782_400 * second + 5_000_000,  // 2000-02-29
                                 7_258_118_399 * second + 999_000_000,  // 2199-12-31T23:59:59.999
                                 -1, -second, -second - 1, -86_400 * second,
                                 Int64.max,  // 2262-04-11T23:47:16.854Z, the last instant Int64 nanoseconds hold
                                 Int64.min]
        for nanos in instants {
            for milliseconds in [false, true] {
                #expect(ISO8601.format(nanos: nanos, milliseconds: milliseconds) == Self.interpolated(nanos: nanos, milliseconds: milliseconds),
                        "\(nanos) \(milliseconds)")
            }
        }
        #expect(ISO8601.format(nanos: 1_369_353_600 * second + 78_999_999, milliseconds: true) == "2013-05-24T00:00:00.078Z")
        #expect(ISO8601.format(nanos: Int64.max, milliseconds: true) == "2262-04-11T23:47:16.854Z")
        #expect(ISO8601.format(nanos: -second) == "1969-12-31T23:59:59Z")
        #expect(ISO8601.format(nanos: 0) == "1970-01-01T00:00:00Z")
    }
}
