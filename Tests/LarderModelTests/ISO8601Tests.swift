import Foundation
import LarderModel
import Testing

/// `ISO8601.parse` reads what `ISO8601.format` writes, and RFC 3339 forms.
@Suite struct ISO8601Tests {
    @Test func parsesWhatItFormats() {
        for nanos: Int64 in [0, 1_000_000, 1_795_000_123_000_000, 4_102_444_799_999_000_000] {
            #expect(ISO8601.parse(ISO8601.format(nanos: nanos, milliseconds: true)) == nanos)
            #expect(ISO8601.parse(ISO8601.format(nanos: nanos)) == nanos / 1_000_000_000 * 1_000_000_000)
        }
    }

    @Test func readsRFC3339FormsAndRefusesOthers() throws {
        let second: Int64 = 1_000_000_000
        #expect(ISO8601.parse("2026-11-22T10:00:00Z") == 1_795_341_600 * second)
        #expect(ISO8601.parse("2026-11-22t10:00:00z") == 1_795_341_600 * second)
        #expect(ISO8601.parse("2026-11-22T12:30:00+02:30") == 1_795_341_600 * second)
        #expect(ISO8601.parse("2026-11-22T09:00:00-01:00") == 1_795_341_600 * second)
        #expect(ISO8601.parse("2026-11-22T10:00:00.5Z") == 1_795_341_600 * second + 500_000_000)
        #expect(ISO8601.parse("2026-11-22T10:00:00.123456789123Z") == 1_795_341_600 * second + 123_456_789)
        for bad in ["", "2026-11-22", "2026-11-22T10:00Z", "2026-11-22T10:00:00", "2026-02-30T00:00:00Z",
                    "2026-13-01T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00+0200",
                    "2026-11-22 10:00:00Z", " 2026-11-22T10:00:00Z", "2026-11-22T10:00:00Zx", "tomorrow"] {
            #expect(ISO8601.parse(bad) == nil, "\(bad)")
        }
        // Foundation agrees on a fractional instant.
        let text = "2031-05-06T07:08:09.250Z"
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let ours = try #require(ISO8601.parse(text)), theirs = try #require(formatter.date(from: text))
        #expect(abs(Double(ours) / 1e9 - theirs.timeIntervalSince1970) < 1e-6)
    }
}
