#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a pthread mutex: `withLock` hands it out `inout`
/// for the length of the closure. Used instead of the standard library's
/// `Synchronization.Mutex` because on Linux that one waits on futexes in
/// uninstrumented code, so ThreadSanitizer cannot see its ordering and
/// reports every access under it as a race; TSan intercepts pthread
/// mutexes, so with this type a TSan run reports only real races.
///
/// Made once per request (a responder's state), so it costs two
/// allocations (itself and the mutex), and no runtime exclusivity check
/// per access: the mutex is what keeps accesses apart.
public final class Locked<Value>: @unchecked Sendable {
    // Guarded by `mutex`. (Internal rather than private so that `withLock`
    // can be inlined into its callers.)
    @usableFromInline @exclusivity(unchecked) var value: Value
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Typed throws, as `Mutex.withLock`: a closure that throws one error
    /// type passes it on as that type.
    @inlinable
    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
