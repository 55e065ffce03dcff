/// How far ahead a value may expire: one cap for the server's `?ttl=` and
/// the Swift API (`WritableLarder.maximumTTLSeconds`, the embedded store,
/// the HTTP client), so the same write is accepted, or capped, on both faces.
public enum ExpiryLimit {
    /// The longest TTL a value can have, in seconds: 100 years (of 365 days).
    public static let maximumTTLSeconds: Int64 = 100 * 365 * 86_400
}
