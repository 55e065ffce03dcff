import LarderStorage
import LarderValueFile

/// A store that hands every call to another one: what an app's own layer
/// (auditing, quotas) over Larder's store looks like. Tests subclass it to
/// change one call (`EarlyPreconditionTests` holds a metadata answer back).
/// Unchecked Sendable: it holds only the inner store, itself Sendable.
open class ForwardingStore: ValueStore, @unchecked Sendable {
    public let inner: any ValueStore
    public init(_ inner: any ValueStore) { self.inner = inner }

    open func open(_ key: StoreKey) throws -> StoredValue { try inner.open(key) }
    open func open(_ key: StoreKey, then completion: @escaping @Sendable (Result<StoredValue, Error>) -> Void) {
        inner.open(key, then: completion)
    }
    open var answersLater: Bool { inner.answersLater }
    open func currentMetadata(of key: StoreKey, then completion: @escaping @Sendable (Result<ValueMetadata?, Error>) -> Void) {
        inner.currentMetadata(of: key, then: completion)
    }
    open func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
        try inner.beginUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos, condition: condition)
    }
    open func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                _ transform: (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) throws -> PutOutcome {
        try inner.update(key, condition: condition, maxValueBytes: maxValueBytes, transform)
    }
    open func delete(_ key: StoreKey, condition: WriteCondition?) throws -> Bool { try inner.delete(key, condition: condition) }
    open func deletePrefix(_ prefix: StorePrefix) throws -> Int { try inner.deletePrefix(prefix) }
    open func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) throws -> StoreListing {
        try inner.list(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory)
    }
    open func makeUniqueID() throws -> String { try inner.makeUniqueID() }
    open func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?) throws -> ValueWriter {
        try inner.beginCreate(under: prefix, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos)
    }
    open func checkHealth() throws { try inner.checkHealth() }
    open var stats: StoreStats { inner.stats }
    open var compressionModes: CompressionModeCounts? { inner.compressionModes }
    open var durability: DurabilityCounts? { inner.durability }
    open var fixtureStats: StoreStats? { inner.fixtureStats }
    open func close() { inner.close() }
    open var isIndexReady: Bool { inner.isIndexReady }
}
