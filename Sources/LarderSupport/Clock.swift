#if canImport(Glibc)
import Glibc
#endif

/// The wall clock in nanoseconds since 1970: versions, modification times
/// and expiry all read it here.
public enum Clock {
    public static func nowNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// A clock that never steps (CLOCK_MONOTONIC), for how long ago
    /// something happened in this process.
    public static func monotonicNanos() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
