import LarderStoreVocabulary
/// The words a write is made of, shared by every store: a condition on
/// the current value, and the writer a body streams into. They live with
/// the value-file format because `ValueUpload`, the format's writer, is the
/// writer every store hands out (the disk store publishing a file, the
/// PostgreSQL store a row of the same bytes).

/// A check run atomically with a write, under the key's barrier, on the
/// metadata of the current value (nil when the key is absent or expired).
/// Throwing refuses the write: the error reaches the caller as it is.
public typealias WriteCondition = @Sendable (ValueMetadata?) throws -> Void

/// A value being written: body pieces in, then `finish` publishes it.
/// Used by one thread at a time (the connection's queue).
public protocol ValueWriter: AnyObject {
    var key: StoreKey { get }
    /// The body's size, when known before its first byte (Content-Length):
    /// lets the store plan for a large value. Optional to call.
    func expect(bytes: Int64) throws
    func write(_ chunk: UnsafeRawBufferPointer) throws
    /// Keeps `attributes` with the value (`ValueMetadata.attributes`); the
    /// last ones set before `finish` are published. Their room in the header
    /// is fixed by the first body byte: later calls must keep the length
    /// (a face that learns a digest at the end sets a placeholder of the
    /// digest's length first). Throws `StoreError.invalidAttributes` for
    /// more than `ValueMetadata.maxAttributeBytes` or a changed length.
    func setAttributes(_ attributes: [UInt8]) throws
    /// Appends the whole of `value`, a finished value of any store, as if
    /// its bytes were written, but without inflating or deflating them
    /// when both are cut into segments of one size (`SegmentTable`,
    /// joinable): the compressed bytes are copied as they lie. False, with
    /// nothing appended, when it cannot be done here: then write the
    /// value's bytes instead. `isLast`: nothing is written after it.
    func join(_ value: StoredValue, isLast: Bool) throws -> Bool
    /// Completes the value and publishes it; the write condition is checked
    /// at that moment, atomically with the publish. The answer comes once
    /// the value is published and durable: now, or later (after a flush, a
    /// commit) without holding the caller's thread. The writer is handed over.
    /// An answer given later runs its continuation on the store's own thread
    /// (the disk store's flush thread): a continuation that makes another
    /// store call, which may wait for that very thread, hops to another
    /// queue first.
    func finish() -> StoreReply<PutOutcome>
    /// Drops the write; safe to call more than once.
    func abort()
}

extension ValueWriter {
    public func expect(bytes: Int64) throws {}
    public func join(_ value: StoredValue, isLast: Bool) throws -> Bool { false }
}
