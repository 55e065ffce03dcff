import LarderSupport
import LarderValueFile
import LarderStoreVocabulary
/// What a JSON update (append, merge patch) makes of the current value.
public struct UpdatedValue: Sendable {
    public var bytes: [UInt8]
    public var contentType: String
    public init(bytes: [UInt8], contentType: String) {
        self.bytes = bytes
        self.contentType = contentType
    }
}

/// Opens a store, given the observer its changes go to and the logger it
/// logs to. Whoever chooses the store (the `larder` executable, a test)
/// makes one; the server calls it once, when it starts.
public typealias ValueStoreFactory = @Sendable (_ changes: StoreChangeObserver, _ logger: Logger) throws -> any ValueStore

/// The storage the routes depend on. `DiskStore` is one backend,
/// `PostgresStore` another; a fixtures layer fits over either.
///
/// A call that may wait answers with a `StoreReply`: the disk store answers
/// now, on the caller's thread (a connection's queue), doing its disk I/O
/// there but never waiting on other requests; a store whose calls are
/// network round trips answers later, and no thread waits for it. Callers
/// write one path for both. Changes are reported to the
/// `StoreChangeObserver` the store was made with.
public protocol ValueStore: AnyObject, Sendable {
    /// Opens the value of `key`; `StoreError.notFound` when absent or expired.
    func open(_ key: StoreKey) -> StoreReply<StoredValue>
    /// The metadata of the live value of `key` (nil: absent or expired):
    /// what a write condition is checked against before a body is asked
    /// for. A store whose reads are round trips reads the metadata alone,
    /// not the value.
    func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?>
    /// Starts writing `key`; `condition` is checked when the write publishes
    /// (`ValueWriter.finish`). Making the writer never waits.
    func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter
    /// Reads the current value (nil: absent), lets `transform` make the new
    /// one, and publishes it only if nothing wrote the key in between
    /// (retrying otherwise) and `condition` holds: a read-modify-write that
    /// never loses a concurrent update. Values above `maxValueBytes` are
    /// refused. `transform` may run more than once, on any thread.
    func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                _ transform: @escaping @Sendable (_ current: ValueMetadata?, _ value: [UInt8]?) throws -> UpdatedValue)
        -> StoreReply<PutOutcome>
    /// Deletes `key` if `condition` holds; answers whether it existed.
    func delete(_ key: StoreKey, condition: WriteCondition?) -> StoreReply<Bool>
    /// Deletes every key under `prefix` (everything for the empty prefix); answers how many.
    func deletePrefix(_ prefix: StorePrefix) -> StoreReply<Int>
    /// A page of keys under `prefix` in byte order.
    func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) -> StoreReply<StoreListing>
    /// A new identifier, unique in this store and sorting after every one
    /// made before it (for generated keys).
    func makeUniqueID() -> StoreReply<String>
    /// Starts writing a value under a new key below `prefix`: the prefix and
    /// an identifier as `makeUniqueID` makes them. The key is the one in
    /// the write's outcome (a store may give it when the write commits).
    func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?) throws -> ValueWriter
    /// Starts an all-or-nothing restore of values under `prefix` (a
    /// snapshot document); with `replace`, what is under the prefix and not
    /// restored goes when it commits. Nothing is visible until `commit`.
    func beginRestore(under prefix: StorePrefix, replace: Bool) throws -> any RestoreTransaction
    /// Fails when the store cannot read and write.
    func checkHealth() -> StoreReply<Void>
    /// Values and bytes stored, kept as running totals (cheap to read:
    /// `/metrics` asks on every scrape).
    var stats: StoreStats { get }
    /// Values compressed per mode since start-up (nil: the store does not
    /// choose one per value).
    var compressionModes: CompressionModeCounts? { get }
    /// Flushes issued and durable writes acknowledged since start-up (nil:
    /// the store does not flush, or does not count).
    var durability: DurabilityCounts? { get }
    /// Values and bytes of the read-only fixtures under the store (nil: no
    /// fixtures are mounted). `/metrics` reports them apart from `stats`.
    var fixtureStats: StoreStats? { get }
    /// Finishes background work and lets go of the store's resources.
    func close()
    /// Whether start-up work is done: listings are fast and `stats` exact
    /// (a `DiskStore` scans its values in the background after opening).
    var isIndexReady: Bool { get }
    /// The clock its expiry and modification times read (its namespace's):
    /// the system's until a test moves it.
    var clock: StoreClock { get }
    /// Moves the clock, then removes what expired by its new time, each
    /// with its `expire` change, and answers once they are gone (so a
    /// client that moved time sees the expiry done). `StoreClock.Backwards`
    /// for a `set` before now.
    func moveClock(_ move: StoreClock.Move) -> StoreReply<StoreClock.Reading>
}

extension ValueStore {
    /// Asks for a unique ID now: for a store whose `makeUniqueID` answers
    /// now (the disk store); one that answers later names generated keys
    /// at commit instead (`PostgresStore.beginCreate`).
    public func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                            expiresNanos: Int64?) throws -> ValueWriter {
        let key = try StoreKey(prefix.string + (try makeUniqueID().get()))
        return try beginUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos,
                               condition: WriteConditions.mustNotExist)
    }

    public var compressionModes: CompressionModeCounts? { nil }
    public var durability: DurabilityCounts? { nil }
    public var fixtureStats: StoreStats? { nil }
    public var isIndexReady: Bool { true }
}
