import LarderStorage
import LarderValueFile
import LarderStoreVocabulary

/// A store that hands every call to another one: what an app's own layer
/// (auditing, quotas) over Larder's store looks like. A test's store
/// conforms, names its `inner` store and writes only the calls it changes
/// (`EarlyPreconditionTests` holds a metadata answer back); the rest
/// forward. A protocol, not an open class: the stores' types are `package`,
/// and a package class cannot be subclassed in another module.
package protocol ForwardingStore: ValueStore {
    var inner: any ValueStore { get }
}

extension ForwardingStore {
    package func open(_ key: StoreKey) -> StoreReply<StoredValue> { inner.open(key) }
    package func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?> { inner.currentMetadata(of: key) }
    package func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
        try inner.beginUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos, condition: condition)
    }
    package func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                _ transform: @escaping @Sendable (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) -> StoreReply<PutOutcome> {
        inner.update(key, condition: condition, maxValueBytes: maxValueBytes, transform)
    }
    package func delete(_ key: StoreKey, condition: WriteCondition?) -> StoreReply<Bool> { inner.delete(key, condition: condition) }
    package func deletePrefix(_ prefix: StorePrefix) -> StoreReply<Int> { inner.deletePrefix(prefix) }
    package func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) -> StoreReply<StoreListing> {
        inner.list(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory)
    }
    package func makeUniqueID() -> StoreReply<String> { inner.makeUniqueID() }
    package func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?) throws -> ValueWriter {
        try inner.beginCreate(under: prefix, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos)
    }
    package func beginRestore(under prefix: StorePrefix, replace: Bool) throws -> any RestoreTransaction {
        try inner.beginRestore(under: prefix, replace: replace)
    }
    package func checkHealth() -> StoreReply<Void> { inner.checkHealth() }
    package var stats: StoreStats { inner.stats }
    package var compressionModes: CompressionModeCounts? { inner.compressionModes }
    package var durability: DurabilityCounts? { inner.durability }
    package var fixtureStats: StoreStats? { inner.fixtureStats }
    package func close() { inner.close() }
    package var isIndexReady: Bool { inner.isIndexReady }
    package var clock: StoreClock { inner.clock }
    package func moveClock(_ move: StoreClock.Move) -> StoreReply<StoreClock.Reading> { inner.moveClock(move) }
}

/// A `ForwardingStore` that changes nothing: an app's layer over Larder's
/// store, as such (`FixtureMetricsTests`: its metrics go through it).
package final class PassThroughStore: ForwardingStore, @unchecked Sendable {
    package let inner: any ValueStore
    package init(_ inner: any ValueStore) { self.inner = inner }
}
