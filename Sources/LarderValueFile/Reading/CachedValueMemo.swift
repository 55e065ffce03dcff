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
    private let identity = AtomicLazyReference<AnyObject>()
    private let gzip = AtomicLazyReference<AnyObject>()

    package init() {}

    /// What was kept for the representation, if anything yet.
    package func kept(gzip: Bool) -> AnyObject? {
        gzip ? self.gzip.load() : identity.load()
    }

    /// Keeps `value` for the representation unless another reader was
    /// first; returns what is kept.
    @discardableResult
    package func keep(_ value: AnyObject, gzip: Bool) -> AnyObject {
        gzip ? self.gzip.storeIfNil(value) : identity.storeIfNil(value)
    }
}
