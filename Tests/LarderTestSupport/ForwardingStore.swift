import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// A store that hands every call to another one: what an app's own layer
/// (auditing, quotas) over Larder's store looks like. Tests subclass it to
/// change one call (`EarlyPreconditionTests` holds a metadata answer back).
/// Unchecked Sendable: it holds only the inner store, itself Sendable.
open class ForwardingStore: ValueStore, @unchecked Sendable {
    public let inner: any ValueStore
    public init(_ inner: any ValueStore) { self.inner = inner }

    open func open(_ key: StoreKey) -> StoreReply<StoredValue> { inner.open(key) }
    open func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?> { inner.currentMetadata(of: key) }
    open func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
        try inner.beginUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos, condition: condition)
    }
    open func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                _ transform: @escaping @Sendable (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) -> StoreReply<PutOutcome> {
        inner.update(key, condition: condition, maxValueBytes: maxValueBytes, transform)
    }
    open func delete(_ key: StoreKey, condition: WriteCondition?) -> StoreReply<Bool> { inner.delete(key, condition: condition) }
    open func deletePrefix(_ prefix: StorePrefix) -> StoreReply<Int> { inner.deletePrefix(prefix) }
    open func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) -> StoreReply<StoreListing> {
        inner.list(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory)
    }
    open func makeUniqueID() -> StoreReply<String> { inner.makeUniqueID() }
    open func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?) throws -> ValueWriter {
        try inner.beginCreate(under: prefix, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos)
    }
    open func beginRestore(under prefix: StorePrefix, replace: Bool) throws -> any RestoreTransaction {
        try inner.beginRestore(under: prefix, replace: replace)
    }
    open func checkHealth() -> StoreReply<Void> { inner.checkHealth() }
    open var stats: StoreStats { inner.stats }
    open var compressionModes: CompressionModeCounts? { inner.compressionModes }
    open var durability: DurabilityCounts? { inner.durability }
    open var fixtureStats: StoreStats? { inner.fixtureStats }
    open func close() { inner.close() }
    open var isIndexReady: Bool { inner.isIndexReady }
}
