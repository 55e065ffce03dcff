#if canImport(Glibc)
import Glibc
#endif

/// A mark on the current thread (a pthread key): set once, on the thread
/// that it marks.
public final class ThreadMark: @unchecked Sendable {
    private var key = pthread_key_t()

    public init() { pthread_key_create(&key, nil) }

    public var isSet: Bool { pthread_getspecific(key) != nil }

    public func set(_ on: Bool = true) { pthread_setspecific(key, on ? UnsafeRawPointer(bitPattern: 1) : nil) }
}
