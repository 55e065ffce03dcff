import Foundation
import LarderApp
import LarderDiskStore
import LarderFixtures
import LarderStorage
import LarderValueFile
import Testing
import LarderTestSupport

/// `/metrics` learns the fixture totals from the store's own answer
/// (`ValueStore.fixtureStats`), not from which class the store is: a store
/// that wraps the fixture layer (as an app adding its own layer would)
/// still has its fixtures counted.
@Suite struct FixtureMetricsTests {
    @Test func fixturesUnderAWrappedStoreAreCounted() throws {
        let fixtures = try FixtureTests.makeFixtures()
        defer { try? FileManager.default.removeItem(atPath: fixtures) }
        let server = try TestServer { setup in
            let options = setup.store
            setup.openStore = { changes, logger in
                ForwardingStore(try LayeredStore(options: options, fixturesDirectory: fixtures, logger: logger, changes: changes))
            }
        }
        defer { server.stop() }
        let client = server.client()
        #expect(try client.get("users/1.json").header("Larder-Source") == "fixture")
        let metrics = try client.send("GET", "/metrics").text
        #expect(metrics.contains("\nlarder_fixture_keys 5\n"), "\(metrics)")
    }
}

/// A store that hands every call to another one: what an app's own layer
/// (auditing, quotas) over Larder's store looks like.
private final class ForwardingStore: ValueStore {
    let inner: any ValueStore
    init(_ inner: any ValueStore) { self.inner = inner }

    func open(_ key: StoreKey) throws -> StoredValue { try inner.open(key) }
    func open(_ key: StoreKey, then completion: @escaping @Sendable (Result<StoredValue, Error>) -> Void) {
        inner.open(key, then: completion)
    }
    var answersLater: Bool { inner.answersLater }
    func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
        try inner.beginUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos, condition: condition)
    }
    func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                _ transform: (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) throws -> PutOutcome {
        try inner.update(key, condition: condition, maxValueBytes: maxValueBytes, transform)
    }
    func delete(_ key: StoreKey, condition: WriteCondition?) throws -> Bool { try inner.delete(key, condition: condition) }
    func deletePrefix(_ prefix: StorePrefix) throws -> Int { try inner.deletePrefix(prefix) }
    func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) throws -> StoreListing {
        try inner.list(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory)
    }
    func makeUniqueID() throws -> String { try inner.makeUniqueID() }
    func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?) throws -> ValueWriter {
        try inner.beginCreate(under: prefix, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos)
    }
    func checkHealth() throws { try inner.checkHealth() }
    var stats: StoreStats { inner.stats }
    var compressionModes: CompressionModeCounts? { inner.compressionModes }
    var durability: DurabilityCounts? { inner.durability }
    var fixtureStats: StoreStats? { inner.fixtureStats }
    func close() { inner.close() }
    var isIndexReady: Bool { inner.isIndexReady }
}
