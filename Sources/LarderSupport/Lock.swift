#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex for tiny critical sections (pools, counters) where a
/// DispatchQueue round trip would cost more than the work it guards.
/// Shared by the store (pools, counters, cache) and the HTTP layer (deferred answers).
public final class Lock: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
