import LarderTestSupport
import Testing
@testable import LarderHTTP
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Sun, 06 Nov 1994 08:49:37 GMT, the RFC's example date.
private let rfcExample: Int64 = 784_111_777
/// 2026-01-01T00:00:00Z, a pinned "now" for the two-digit-year rule.
private let jan2026: Int64 = 1_767_225_600

@Suite(.blockingLane) struct HTTPDateFormatTests {
    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(secondsSince1970: rfcExample) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(secondsSince1970: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test(arguments: [Int64(0), -1, rfcExample, 951_782_400, 1_709_164_800, jan2026, 4_102_444_799])
    func roundTrips(_ seconds: Int64) {
        #expect(HTTPDate.parse(HTTPDate.format(secondsSince1970: seconds)) == seconds)
    }

    @Test func nowBytesIsTheCurrentSecond() {
        let text = String(decoding: HTTPDate.nowBytes(), as: UTF8.self)
        let parsed = HTTPDate.parse(text)
        let now = Int64(time(nil))
        #expect(parsed != nil)
        if let parsed { #expect(abs(parsed - now) <= 2) }
    }
}

@Suite(.blockingLane) struct HTTPDateParseTests {
    @Test func imfFixdate() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == rfcExample)
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.parse("Wed, 31 Dec 1969 23:59:59 GMT") == -1)
        // Surrounding whitespace (OWS) is tolerated.
        #expect(HTTPDate.parse("  Sun, 06 Nov 1994 08:49:37 GMT\t") == rfcExample)
    }

    @Test func rfc850() {
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: jan2026) == rfcExample)
        #expect(HTTPDate.parse("Wednesday, 09-Nov-94 08:49:37 GMT", now: jan2026) == rfcExample + 3 * 86_400)
        // The clock-based overload agrees (until 2044, when 94 stops meaning 1994).
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == rfcExample)
    }

    @Test func asctime() {
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == rfcExample)
        #expect(HTTPDate.parse("Sun Nov 06 08:49:37 1994") == rfcExample)  // 2DIGIT form
        #expect(HTTPDate.parse("Wed Nov 16 08:49:37 1994") == rfcExample + 10 * 86_400)
    }

    @Test func allThreeFormsAgree() {
        let imf = HTTPDate.parse("Tue, 29 Feb 2000 12:00:00 GMT")
        #expect(imf != nil)
        #expect(HTTPDate.parse("Tuesday, 29-Feb-00 12:00:00 GMT", now: jan2026) == imf)
        #expect(HTTPDate.parse("Tue Feb 29 12:00:00 2000") == imf)
    }

    @Test func twoDigitYearRule() {
        func year(_ yy: String, now: Int64) -> Int64? {
            // 1 Jan of the resolved year, compared with the IMF-fixdate of candidates.
            HTTPDate.parse("Monday, 01-Jan-\(yy) 00:00:00 GMT", now: now)
        }
        func jan1(_ y: Int) -> Int64? { HTTPDate.parse("Mon, 01 Jan \(y) 00:00:00 GMT") }
        // Now = 2026: 2076 is exactly 50 years ahead, not more, so it stays.
        #expect(year("76", now: jan2026) == jan1(2076))
        #expect(year("77", now: jan2026) == jan1(1977))
        #expect(year("94", now: jan2026) == jan1(1994))
        #expect(year("26", now: jan2026) == jan1(2026))
        #expect(year("00", now: jan2026) == jan1(2000))
        #expect(year("25", now: jan2026) == jan1(2025))
        // Near a century end the window crosses it: in 2099, "01" is 2101.
        let jan2099: Int64 = 4_070_908_800
        #expect(year("01", now: jan2099) == jan1(2101))
        #expect(year("49", now: jan2099) == jan1(2149))
        #expect(year("50", now: jan2099) == jan1(2050))
        // Before 1970 too (floor arithmetic for negative times).
        // now = 1960: the window is 1911...2010.
        #expect(HTTPDate.resolveTwoDigitYear(10, now: -315_619_200) == 2010)
        #expect(HTTPDate.resolveTwoDigitYear(11, now: -315_619_200) == 1911)
        #expect(HTTPDate.resolveTwoDigitYear(60, now: -315_619_200) == 1960)
    }

    @Test func leapYears() {
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 00:00:00 GMT") == 1_709_164_800)
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 00:00:00 GMT") == 951_782_400)
        #expect(HTTPDate.parse("Wed, 29 Feb 2023 00:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Thu, 29 Feb 1900 00:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 30 Feb 2024 00:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Thu, 31 Apr 2024 00:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Wed, 31 Jan 2024 00:00:00 GMT") != nil)
    }

    @Test func leapSecondIsAccepted() {
        #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == HTTPDate.parse("Sun, 01 Jan 2017 00:00:00 GMT"))
    }

    @Test func weekdayIsNotCrossChecked() {
        // 06 Nov 1994 was a Sunday; a wrong but real day name is tolerated.
        #expect(HTTPDate.parse("Mon, 06 Nov 1994 08:49:37 GMT") == rfcExample)
    }

    @Test(arguments: [
        "",
        "GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT",       // hour 25
        "Sun, 06 Nov 1994 24:00:00 GMT",       // hour 24
        "Sun, 06 Nov 1994 08:60:37 GMT",       // minute 60
        "Sun, 06 Nov 1994 08:49:61 GMT",       // second 61
        "Sun, 00 Nov 1994 08:49:37 GMT",       // day 0
        "Sun, 32 Dec 1994 08:49:37 GMT",       // day 32
        "Sun, 30 Feb 1994 08:49:37 GMT",       // Feb 30
        "Sux, 06 Nov 1994 08:49:37 GMT",       // bad day name
        "Sun, 06 Nev 1994 08:49:37 GMT",       // bad month name
        "sun, 06 Nov 1994 08:49:37 GMT",       // names are case-sensitive
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 gmt",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 6 Nov 1994 08:49:37 GMT",        // 1-digit day in IMF-fixdate
        "Sun, 06 Nov 94 08:49:37 GMT",         // 2-digit year in IMF-fixdate
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT junk",
        "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",  // a list
        "Sun, +6 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-1994 08:49:37 GMT",    // 4-digit year in RFC 850
        "Sundae, 06-Nov-94 08:49:37 GMT",      // bad long day name
        "Sun, 06-Nov-94 08:49:37 GMT",         // short day name in RFC 850
        "Sunday, 06 Nov 1994 08:49:37 GMT",    // long day name in IMF-fixdate
        "Sunday, 06-Nov-94 25:49:37 GMT",
        "Sunday, 31-Nov-94 08:49:37 GMT",      // Nov 31
        "Sunday, 06-Nov-94 08:49:37",
        "Sun Nov 6 08:49:37 1994",             // asctime needs two columns for the day
        "Sun Nov  6 08:49:37 94",
        "Sun Nov  6 25:49:37 1994",
        "Sun Nov 31 08:49:37 1994",
        "Sun Nov  6 08:49:37 1994 GMT",
        "Sun Xyz  6 08:49:37 1994",
        "1994-11-06T08:49:37Z",
        "784111777",
    ])
    func rejectsInvalid(_ text: String) {
        #expect(HTTPDate.parse(text, now: jan2026) == nil)
    }
}
