/// The defaults that more than one module applies, each written once: the
/// HTTP server, the stores and `larder serve`'s flags all read them here.
/// (A default that one type alone applies sits on that type, as a
/// static or a property's initial value, and the flags read it there.)
public enum ServerDefaults {
    /// Largest value in bytes, and so the largest request body
    /// (`--max-value-size`; 413 above): 1 GiB.
    public static let maxValueSize: Int64 = 1 << 30
    /// Recent changes kept for `Last-Event-ID` replay on `/events`
    /// (`--event-history`), by the server's change hub and the PostgreSQL
    /// store's change table alike.
    public static let changeHistory = 10_000
}
