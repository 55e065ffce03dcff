import LarderModel

/// S3's timestamps in XML: ISO 8601 in UTC with milliseconds
/// (`2026-01-02T03:04:05.678Z`), written by the one formatter.
enum S3Time {
    static func iso8601(nanos: Int64) -> String {
        ISO8601.format(nanos: nanos, milliseconds: true)
    }
}
