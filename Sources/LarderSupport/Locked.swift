#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a pthread mutex: `withLock` hands it out `inout`
/// for the length of the closure. Used instead of the standard library's
/// `Synchronization.Mutex` because on Linux that one waits on futexes in
/// uninstrumented code, so ThreadSanitizer cannot see its ordering and
/// reports every access under it as a race; TSan intercepts pthread
/// mutexes, so with this type a TSan run reports only real races.
public final class Locked<Value>: @unchecked Sendable {
    // Guarded by `lock`. (Internal rather than private so that `withLock`
    // can be inlined into its callers.)
    @usableFromInline var value: Value
    @usableFromInline let lock = Lock()

    public init(_ value: Value) { self.value = value }

    /// Typed throws, as `Mutex.withLock`: a closure that throws one error
    /// type passes it on as that type.
    @inlinable
    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(lock.mutex)
        defer { pthread_mutex_unlock(lock.mutex) }
        return try body(&value)
    }
}
