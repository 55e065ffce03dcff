import Synchronization

/// What a reader derives from a cached value once and keeps with it for
/// every later hit: the HTTP application keeps its answer's formatted head
/// here, so a hot GET does not format the same header lines again. One slot
/// per representation (identity, gzip); each is set at most once and read
/// without a lock. An entry replaced in the cache takes its memo with it,
/// so a memo never outlives the value it was derived from.
///
/// `@unchecked Sendable`: the slots are atomics, and what they hold must be
/// immutable (the store does not know its type).
package final class CachedValueMemo: @unchecked Sendable {
    // Each slot is 0 or the address of an object the memo holds one
    // reference to (`AtomicLazyReference` does the same, but its load is a
    // call into the Synchronization library, not inlined: ~300 instructions).
    private let identity = Atomic<UInt>(0)
    private let gzip = Atomic<UInt>(0)

    package init() {}

    deinit {
        for bits in [identity.load(ordering: .acquiring), gzip.load(ordering: .acquiring)] where bits != 0 {
            Self.object(bits).release()
        }
    }

    private static func object(_ bits: UInt) -> Unmanaged<AnyObject> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
    }

    /// What was kept for the representation, if anything yet.
    @inline(__always)
    package func kept(gzip: Bool) -> AnyObject? {
        let bits = gzip ? self.gzip.load(ordering: .acquiring) : identity.load(ordering: .acquiring)
        return bits == 0 ? nil : Self.object(bits).takeUnretainedValue()
    }

    /// Keeps `value` for the representation unless another reader was
    /// first; returns what is kept.
    @discardableResult
    package func keep(_ value: AnyObject, gzip: Bool) -> AnyObject {
        let bits = UInt(bitPattern: Unmanaged.passRetained(value).toOpaque())
        let (stored, found) = gzip
            ? self.gzip.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing)
            : identity.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing)
        if stored { return value }
        Self.object(bits).release()
        return Self.object(found).takeUnretainedValue()
    }
}
