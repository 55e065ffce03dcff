import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderStoreVocabulary

/// The store over its fixtures (`--fixtures DIR`): reads fall back to the
/// fixture when the store has no value, writes go to the store only,
/// deleting a key that has a fixture reverts it to the fixture, and a reset
/// (`deletePrefix(.root)`) leaves exactly the fixtures, in the time the
/// store's own O(1) reset takes.
///
/// To a client a key with a fixture always exists: preconditions see the
/// fixture's metadata when the store has none, a PUT over it answers 204,
/// and an append or merge patch starts from the fixture's value. Both layers
/// are thread-safe and the fixtures never change, so this type holds no
/// state of its own beyond them.
package final class LayeredStore: ValueStore, Sendable {
    /// The writable layer.
    package let store: any ValueStore
    /// The read-only layer under it.
    package let fixtures: FixtureLayer
    /// False when the fixtures are shared with other stores (namespaces,
    /// `SharedFixtures`): closing this store leaves them open.
    private let ownsFixtures: Bool

    /// Opens the store in `options.dataDirectory` (taking its lock), then
    /// compiles `fixturesDirectory` into `<data>/fixture-cache`.
    package convenience init(options: DiskStoreOptions, fixturesDirectory: String, logger: Logger = .silent(),
                            changes: StoreChangeObserver? = nil) throws {
        try self.init(fixturesDirectory: fixturesDirectory, cacheDirectory: options.dataDirectory + "/fixture-cache",
                      cacheBytes: options.cacheBytes / 4, logger: logger, changes: changes) { filter in
            try DiskStore(options: options, logger: logger, changes: filter)
        }
    }

    /// The store `open` makes (told of changes through the filter that
    /// turns deletes over fixtures into reverts), over the fixtures of
    /// `fixturesDirectory` compiled into `cacheDirectory`.
    package init(fixturesDirectory: String, cacheDirectory: String, cacheBytes: Int, logger: Logger = .silent(),
                changes: StoreChangeObserver? = nil, open: (StoreChangeObserver) throws -> any ValueStore) throws {
        let filter = FixtureChangeFilter(downstream: changes)
        // The store first: the disk store's lock says whether the data
        // directory (where the fixtures are compiled) is ours to use.
        store = try open(filter)
        do {
            fixtures = try FixtureLayer(directory: fixturesDirectory, cacheDirectory: cacheDirectory,
                                        cacheBytes: cacheBytes, logger: logger)
        } catch {
            store.close()
            throw error
        }
        filter.attach(fixtures)
        ownsFixtures = true
    }

    /// `store` (told of changes through `filter`, already attached) over
    /// `fixtures`, which other stores share: `close` leaves them open.
    init(store: any ValueStore, sharing fixtures: FixtureLayer) {
        self.store = store
        self.fixtures = fixtures
        ownsFixtures = false
    }

    /// The writable layer when it is the disk store.
    package var diskStore: DiskStore? { store as? DiskStore }

    /// The store's value, else the fixture's (a local file, read now).
    package func open(_ key: StoreKey) -> StoreReply<StoredValue> {
        let reply = store.open(key)
        // Given now and found (the disk store's cached GET): no chaining.
        if case .now(.success) = reply { return reply }
        let fixtures = self.fixtures
        return reply.then { result in
            guard case .failure(StoreError.notFound) = result, fixtures.metadata(key.string) != nil else { return .now(result) }
            return .catching { try fixtures.open(key) }
        }
    }

    /// The store's own metadata query (PostgreSQL: the row's columns, not
    /// the value); a key the store lacks reads from its fixture, a local file.
    package func currentMetadata(of key: StoreKey) -> StoreReply<ValueMetadata?> {
        let fixtures = self.fixtures
        return store.currentMetadata(of: key).then { result in
            guard case .success(nil) = result, fixtures.metadata(key.string) != nil else { return .now(result) }
            return .catching {
                let value = try fixtures.open(key)
                defer { value.close() }
                return value.metadata
            }
        }
    }

    package func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                            expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter {
        let fixture = fixtures.metadata(key.string)
        let writer = try store.beginUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos,
                                           condition: Self.seeing(fixture, condition))
        return fixture == nil ? writer : OverFixtureWriter(writer)
    }

    package func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                       _ transform: @escaping @Sendable (ValueMetadata?, [UInt8]?) throws -> UpdatedValue) -> StoreReply<PutOutcome> {
        guard let fixture = fixtures.metadata(key.string) else {
            return store.update(key, condition: condition, maxValueBytes: maxValueBytes, transform)
        }
        // With no store value the update starts from the fixture's. The
        // fixture never changes, so reading it once is enough however often
        // the store retries (the attempts run one at a time).
        let fixtures = self.fixtures
        let fixtureBytes = Locked<[UInt8]?>(nil)
        return store.update(key, condition: Self.seeing(fixture, condition), maxValueBytes: maxValueBytes) { meta, value in
            if meta != nil { return try transform(meta, value) }
            let bytes = try fixtureBytes.withLock { (bytes: inout [UInt8]?) -> [UInt8] in
                if let bytes { return bytes }
                let opened = try fixtures.open(key)
                defer { opened.close() }
                guard opened.metadata.size <= UInt64(maxValueBytes) else { throw StoreError.tooLarge(limit: Int64(maxValueBytes)) }
                bytes = try opened.readAll()
                return bytes!
            }
            return try transform(fixture, bytes)
        }.map { PutOutcome(created: false, metadata: $0.metadata) }
    }

    /// True when the key existed to the client: a store value was removed,
    /// or the key reads as its fixture (which a delete cannot remove).
    package func delete(_ key: StoreKey, condition: WriteCondition?) -> StoreReply<Bool> {
        let fixture = fixtures.metadata(key.string)
        return store.delete(key, condition: Self.seeing(fixture, condition)).map { removed in removed || fixture != nil }
    }

    /// Resets the store's keys under `prefix`; its fixtures show again.
    /// Counts the store values removed.
    package func deletePrefix(_ prefix: StorePrefix) -> StoreReply<Int> {
        store.deletePrefix(prefix)
    }

    /// Restores go to the store; the fixtures under them stay as they are,
    /// as with `deletePrefix`.
    package func beginRestore(under prefix: StorePrefix, replace: Bool) throws -> any RestoreTransaction {
        try store.beginRestore(under: prefix, replace: replace)
    }

    package func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) -> StoreReply<StoreListing> {
        let fixtures = self.fixtures
        return store.list(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory).map { upper in
            guard fixtures.hasAny(under: prefix.string) else { return upper }
            var lower = try fixtures.disk.listValues(prefix: prefix, after: after, limit: limit, groupByDirectory: groupByDirectory)
            for i in lower.values.indices { lower.values[i].source = .fixture }
            return StoreListing.merging(upper, over: lower, limit: limit)
        }
    }

    package func makeUniqueID() -> StoreReply<String> { store.makeUniqueID() }

    /// Generated keys are new to the store; a fixture under one would be a
    /// fixture named like a generated identifier, which the store never
    /// reuses, so the write goes straight to the store.
    package func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                            expiresNanos: Int64?) throws -> ValueWriter {
        try store.beginCreate(under: prefix, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos)
    }

    package func checkHealth() -> StoreReply<Void> {
        store.checkHealth()
    }

    /// The writable store's totals: what was written. Fixtures are counted
    /// apart (`fixtureStats`), since which of them a stored value shadows
    /// would take a look at every one.
    package var stats: StoreStats { store.stats }

    /// Only the writable store compresses values.
    package var compressionModes: CompressionModeCounts? { store.compressionModes }

    /// Only the writable store flushes.
    package var durability: DurabilityCounts? { store.durability }
    package var isIndexReady: Bool { store.isIndexReady && fixtures.disk.isIndexReady }

    /// The writable layer's: fixtures have no expiry, and keep their own times.
    package var clock: StoreClock { store.clock }

    package func moveClock(_ move: StoreClock.Move) -> StoreReply<StoreClock.Reading> { store.moveClock(move) }

    /// The fixtures' totals (their compiled gzip files for `storedBytes`).
    package var fixtureStats: StoreStats? { fixtures.disk.stats }

    package func close() {
        store.close()
        if ownsFixtures { fixtures.close() }
    }

    /// `condition` as a client sees it: a key with no store value but a
    /// fixture is the fixture.
    private static func seeing(_ fixture: ValueMetadata?, _ condition: WriteCondition?) -> WriteCondition? {
        guard let fixture, let condition else { return condition }
        return { current in try condition(current ?? fixture) }
    }
}

/// A write over a fixture replaces a value the client could read: it
/// answers as a replacement (204), never as a new key (201).
private final class OverFixtureWriter: ValueWriter {
    private let inner: ValueWriter
    init(_ inner: ValueWriter) { self.inner = inner }
    var key: StoreKey { inner.key }
    func expect(bytes: Int64) throws { try inner.expect(bytes: bytes) }
    func write(_ chunk: UnsafeRawBufferPointer) throws { try inner.write(chunk) }
    func setAttributes(_ attributes: [UInt8]) throws { try inner.setAttributes(attributes) }
    func finish() -> StoreReply<PutOutcome> {
        inner.finish().map { PutOutcome(created: false, metadata: $0.metadata) }
    }
    func abort() { inner.abort() }
}
