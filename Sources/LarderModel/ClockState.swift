/// `GET /clock`: a namespace's clock as it reads now (API.md "Time under
/// the test's control").
public struct ClockState: Codable, Sendable, Hashable {
    /// ISO 8601 with milliseconds, UTC.
    public var now: String
    /// Milliseconds ahead of the system clock (0: on it).
    public var offsetMs: Int64
    public var frozen: Bool

    public init(now: String, offsetMs: Int64, frozen: Bool) {
        self.now = now
        self.offsetMs = offsetMs
        self.frozen = frozen
    }
}
