#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex guarding no value of its own, for tiny critical sections
/// (pools, counters) where a DispatchQueue round trip would cost more than
/// the work it guards: a ``Locked`` of nothing, so the mutex code has one
/// home. Shared by the store (pools, counters, cache) and the HTTP layer
/// (deferred answers).
public typealias Lock = Locked<Void>

extension Locked where Value == Void {
    public convenience init() { self.init(()) }

    /// The closure runs holding the mutex; what it throws passes on as it is.
    @inlinable
    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
