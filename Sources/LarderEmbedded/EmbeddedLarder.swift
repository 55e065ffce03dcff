import Dispatch
import Foundation
import LarderKit
import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderSupport
import LarderSharing
import LarderStoreVocabulary

/// A Larder store in this process: the server's own `DiskStore` on a
/// directory, with the same files (gzip values, crash-safe publishes), the
/// same semantics and the same directory lock, and no server.
///
/// Only one process may have a directory open: while a `larder` server (or
/// another `EmbeddedLarder`) holds it, `init` throws
/// `LarderError.directoryLocked`. `close()` lets it go, so a server can open
/// the same directory afterwards and serve what was written here.
///
/// Threads: the synchronous calls run on the caller's thread (the store
/// orders writes per key with its own barrier queues). The async calls run
/// the same work on `io`, a concurrent dispatch queue, and resume when done,
/// so disk I/O and fsync never block Swift's cooperative pool. `closed` is
/// guarded by `stateLock`; the change hub has its own lock.
///
/// JSON append, the change fan-out and key watches are the server's own
/// (`LarderSharing`): this type only maps them to the Swift API.
public final class EmbeddedLarder: Larder, ReadableLarderSync, WritableLarderSync, @unchecked Sendable {
    /// How `Codable` values become bytes and back.
    public let coder: LarderCoder
    /// The directory the store lives in.
    public let directory: URL

    /// How many changes `changes(prefix:after:)` can replay.
    static let historySize = 4096
    /// How many events a change feed holds for its reader by default.
    static let defaultFeedBuffer = 10_000
    /// How many events a change feed holds for a reader that has not taken
    /// them; a feed that falls further behind ends (see `changes`).
    let feedBuffer: Int

    private let store: DiskStore
    private let hub: ChangeHub
    private let io = DispatchQueue(label: "larder.embedded.io", attributes: .concurrent)
    private let stateLock = NSLock()
    private var closed = false

    /// Opens (creating if needed) the store in `directory`.
    /// - Parameters:
    ///   - directory: the data directory (created if missing), the same as a server's `--data-dir`.
    ///   - fsync: whether each write is flushed to disk before it returns
    ///     (crash-safe; off is much faster and still never leaves a torn value).
    ///   - coder: how `Codable` values are encoded and decoded.
    ///   - logger: where the store's lines go (its start-up scan, damaged
    ///     files), e.g. `Logger(label: "larder.store")` from the app's own
    ///     swift-log backend; by default nowhere.
    /// - Throws: `LarderError.directoryLocked` when another process has the
    ///   directory open; `LarderError.cannotWrite` when it cannot be created or read.
    public convenience init(directory: URL, fsync: Bool = true, coder: LarderCoder = .default,
                            logger: Logger = Logger(label: "larder.store") { _ in SwiftLogNoOpLogHandler() }) throws {
        try self.init(directory: directory, fsync: fsync, coder: coder, feedBuffer: Self.defaultFeedBuffer, logger: logger)
    }

    /// `feedBuffer`: how many unread events a change feed holds (tests make it tiny).
    init(directory: URL, fsync: Bool, coder: LarderCoder, feedBuffer: Int,
         logger: Logger = .silent(label: "larder.store")) throws {
        self.coder = coder
        self.directory = directory
        self.feedBuffer = feedBuffer
        let hub = ChangeHub(historySize: Self.historySize)
        self.hub = hub
        do {
            store = try DiskStore(options: DiskStoreOptions(dataDirectory: directory.path, fsync: fsync), logger: logger, changes: hub)
        } catch {
            throw LarderError.from(error, key: "")
        }
    }

    /// Opens (creating if needed) the store in the folder `name` of `location`:
    /// one app's store, by name.
    /// - Throws: `LarderError.invalidKey` when `name` is empty, `.` or `..`, or
    ///   has a `/`; otherwise as `init(directory:fsync:coder:)`.
    public convenience init(named name: String, in location: StorageLocation = .documents,
                            fsync: Bool = true, coder: LarderCoder = .default,
                            logger: Logger = Logger(label: "larder.store") { _ in SwiftLogNoOpLogHandler() }) throws {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
            throw LarderError.invalidKey(name, reason: "a store name is one folder name: not empty, '.' or '..', and without '/'")
        }
        try self.init(directory: location.url.appendingPathComponent(name, isDirectory: true), fsync: fsync, coder: coder, logger: logger)
    }

    /// Ends watches and change feeds, finishes the store's background work
    /// and releases the directory lock. Later calls throw. Safe to call twice.
    public func close() {
        let first = stateLock.withLock { () -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        hub.close()
        store.close()
    }

    deinit { close() }

    // MARK: - Running store calls

    /// Runs `body` against the store, mapping store errors for `key`.
    private func run<T>(_ key: String, _ body: () throws -> T) throws -> T {
        if stateLock.withLock({ closed }) {
            throw LarderError.cannotWrite(key: key, reason: "the store at \(directory.path) is closed")
        }
        do {
            return try body()
        } catch {
            throw LarderError.from(error, key: key)
        }
    }

    /// Runs a synchronous call on `io` and resumes the task when it is done.
    private func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            io.async { continuation.resume(with: Result(catching: body)) }
        }
    }

    static func storeKey(_ key: String) throws -> StoreKey { try StoreKey(key) }

    /// `prefix` as the store's prefix: `""` or ending in `/`.
    static func storePrefix(_ prefix: String) throws -> StorePrefix {
        guard prefix.isEmpty || prefix.hasSuffix("/") else {
            throw LarderError.invalidKey(prefix, reason: "a prefix is empty or ends in '/'")
        }
        do {
            return try StorePrefix(bytes: Array(prefix.utf8))
        } catch {
            throw LarderError.from(error, key: prefix)
        }
    }

    static func writeCondition(_ condition: SaveCondition) -> WriteCondition? {
        switch condition {
        case .none: nil
        case .ifMatch(let tag): WriteConditions.mustMatch(tag)
        case .ifAbsent: WriteConditions.mustNotExist
        }
    }

    /// A TTL as an absolute expiry: whole seconds rounded up, at least 1, at
    /// most `maximumTTLSeconds` (100 years, as the server's `?ttl=` allows).
    static func expiry(_ ttl: Duration?) -> Int64? {
        guard let ttl else { return nil }
        let (seconds, attoseconds) = ttl.components
        // Capped before rounding up, so `Int64.max` seconds cannot overflow.
        let whole = seconds >= maximumTTLSeconds ? maximumTTLSeconds : max(seconds + (attoseconds > 0 ? 1 : 0), 1)
        return Int64((Date().timeIntervalSince1970 * 1e9).rounded()) + whole * 1_000_000_000
    }

    static func info(_ meta: ValueMetadata, storedSize: Int?) -> ValueInfo {
        ValueInfo(key: meta.key, size: Int(meta.size), storedSize: storedSize, contentType: meta.contentType,
                  etag: meta.etag, modified: Timestamp(nanoseconds: meta.modifiedNanos),
                  expires: meta.expiresNanos.map(Timestamp.init(nanoseconds:)))
    }

    /// The stored value of `key` with its info; `StoreError.notFound` when absent or expired.
    static func read(_ key: StoreKey, in store: DiskStore) throws -> StoredData {
        try read(Result { try store.open(key).get() })
    }

    /// The value `opened` holds, with its info (closing it).
    static func read(_ opened: Result<StoredValue, any Error>) throws -> StoredData {
        let value = try opened.get()
        defer { value.close() }
        return StoredData(data: Data(try value.readAll()), info: info(value.metadata, storedSize: value.fileSize))
    }

    /// Writes `data` under `key` in one upload.
    private func put(_ data: Data, _ key: StoreKey, contentType: String, expires: Int64?,
                     condition: WriteCondition?) throws -> PutOutcome {
        let upload = try store.beginUpload(key: key, contentType: contentType, encoding: .identity,
                                           expiresNanos: expires, condition: condition)
        do {
            try upload.expect(bytes: Int64(data.count))
            try data.withUnsafeBytes { try upload.write($0) }
        } catch {
            upload.abort()
            throw error
        }
        // `finish` takes the upload over, failing or not.
        return try upload.finish().get()
    }

    // MARK: - Reading (synchronous)

    /// The value under `key`. - Throws: `LarderError.notFound` when absent or expired.
    public func fetch(_ key: String) throws -> StoredData {
        try run(key) { try Self.read(Self.storeKey(key), in: store) }
    }

    /// What is known about the value under `key`. - Throws: `LarderError.notFound`.
    public func info(_ key: String) throws -> ValueInfo {
        try run(key) {
            let value = try store.open(Self.storeKey(key)).get()
            defer { value.close() }
            return Self.info(value.metadata, storedSize: value.fileSize)
        }
    }

    /// One page of keys under `prefix` in byte order; `limit` is clamped to 1...10000.
    public func listPage(prefix: String, after: String?, limit: Int, delimiter: Bool) throws -> ListingPage {
        let storePrefix = try Self.storePrefix(prefix)
        return try run(prefix) {
            let listing = try store.list(prefix: storePrefix, after: after.flatMap { $0.isEmpty ? nil : $0 },
                                         limit: min(max(limit, 1), 10_000), groupByDirectory: delimiter).get()
            return ListingPage(prefix: storePrefix.string, keys: listing.values.map(\.info),
                               prefixes: listing.prefixes, next: listing.next)
        }
    }

    // MARK: - Writing (synchronous)

    /// Stores `data` under `key` if `condition` holds; `created` says whether the key was new.
    @discardableResult
    public func save(_ data: Data, at key: String, contentType: String, condition: SaveCondition, ttl: Duration?) throws -> WriteResult {
        try run(key) {
            let outcome = try put(data, Self.storeKey(key), contentType: contentType, expires: Self.expiry(ttl),
                                  condition: Self.writeCondition(condition))
            return WriteResult(key: key, etag: outcome.metadata.etag, created: outcome.created)
        }
    }

    /// Deletes `key` if `condition` holds; whether there was a value.
    /// `.ifMatch` on an absent key fails, as the server's 412 does.
    @discardableResult
    public func delete(_ key: String, condition: SaveCondition) throws -> Bool {
        try run(key) { try store.delete(Self.storeKey(key), condition: Self.writeCondition(condition)).get() }
    }

    /// Deletes every key under `prefix` (`""` or ending in `/`); how many went.
    @discardableResult
    public func removeAll(prefix: String) throws -> Int {
        let storePrefix = try Self.storePrefix(prefix)
        return try run(prefix) { try store.deletePrefix(storePrefix).get() }
    }

    /// Appends JSON to the list under `key` atomically, as `POST /store/<key>` does.
    /// - Throws: `LarderError.notJSON` when the body or the stored value is not JSON.
    @discardableResult
    public func append(json: Data, to key: String, unique: Bool, condition: SaveCondition) throws -> AppendResult {
        let (outcome, count) = try run(key) {
            try JSONUpdate.append(Array(json), unique: unique, to: Self.storeKey(key), in: store,
                                  condition: Self.writeCondition(condition)).get()
        }
        return AppendResult(count: count, etag: outcome.metadata.etag)
    }

    /// Stores `data` under a new key `<prefix><id>`, unique and sorting after every earlier one.
    @discardableResult
    public func create(_ data: Data, under prefix: String, contentType: String, ttl: Duration?) throws -> WriteResult {
        let storePrefix = try Self.storePrefix(prefix)
        return try run(prefix) {
            let key = try StoreKey(storePrefix.string + store.makeUniqueID().get())
            let outcome = try put(data, key, contentType: contentType, expires: Self.expiry(ttl),
                                  condition: WriteConditions.mustNotExist)
            return WriteResult(key: key.string, etag: outcome.metadata.etag, created: true)
        }
    }

    // MARK: - Async (the same calls, off the cooperative pool)

    /// The value under `key`. - Throws: `LarderError.notFound` when absent or expired.
    public func fetch(_ key: String) async throws -> StoredData {
        try await offload { try self.fetch(key) as StoredData }
    }

    /// What is known about the value under `key`. - Throws: `LarderError.notFound`.
    public func info(_ key: String) async throws -> ValueInfo {
        try await offload { try self.info(key) as ValueInfo }
    }

    /// One page of keys under `prefix` in byte order; `limit` is clamped to 1...10000.
    public func listPage(prefix: String, after: String?, limit: Int, delimiter: Bool) async throws -> ListingPage {
        try await offload { try self.listPage(prefix: prefix, after: after, limit: limit, delimiter: delimiter) as ListingPage }
    }

    /// Stores `data` under `key` if `condition` holds.
    @discardableResult
    public func save(_ data: Data, at key: String, contentType: String, condition: SaveCondition, ttl: Duration?) async throws -> WriteResult {
        try await offload { try self.save(data, at: key, contentType: contentType, condition: condition, ttl: ttl) as WriteResult }
    }

    /// Deletes `key` if `condition` holds; whether there was a value.
    @discardableResult
    public func delete(_ key: String, condition: SaveCondition) async throws -> Bool {
        try await offload { try self.delete(key, condition: condition) as Bool }
    }

    /// Deletes every key under `prefix`; how many went.
    @discardableResult
    public func removeAll(prefix: String) async throws -> Int {
        try await offload { try self.removeAll(prefix: prefix) as Int }
    }

    /// Appends JSON to the list under `key` atomically.
    @discardableResult
    public func append(json: Data, to key: String, unique: Bool, condition: SaveCondition) async throws -> AppendResult {
        try await offload { try self.append(json: json, to: key, unique: unique, condition: condition) as AppendResult }
    }

    /// Stores `data` under a new generated key `<prefix><id>`.
    @discardableResult
    public func create(_ data: Data, under prefix: String, contentType: String, ttl: Duration?) async throws -> WriteResult {
        try await offload { try self.create(data, under: prefix, contentType: contentType, ttl: ttl) as WriteResult }
    }

    // MARK: - Watching

    /// The state of `key` now, then after each change to it (or a bulk
    /// delete covering it). States may be skipped (the newest wins), never
    /// reordered. Waiting holds no thread.
    public func watch(_ key: String) -> AsyncThrowingStream<KeyState, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: KeyState.self, throwing: (any Error).self,
                                                                    bufferingPolicy: .bufferingNewest(1))
        let storeKey: StoreKey
        do {
            storeKey = try run(key) { try Self.storeKey(key) }
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        // Reads (disk I/O) run on the watch's own serial queue, so states
        // are yielded in the order they were read; it targets the global
        // pool, so an idle watch costs no thread.
        let queue = DispatchQueue(label: "larder.embedded.watch", target: .global())
        let watch = KeyWatch(key: storeKey, store: store, hub: hub, queue: queue,
                             hubClosed: { continuation.finish() }) { opened in
            do {
                continuation.yield(.present(try Self.read(opened)))
            } catch StoreError.notFound {
                continuation.yield(.absent)
            } catch {
                continuation.finish(throwing: LarderError.from(error, key: key))
                return .done
            }
            return .waiting
        }
        // Holds the larder until the stream ends: `deinit` closes it, which
        // would end a watch on a larder nobody else keeps at once.
        continuation.onTermination = { _ in withExtendedLifetime(self) { watch.end() } }
        watch.start()
        return stream
    }

    /// Every change under `prefix` from now on, in order; with `after`, first
    /// the remembered changes after that event id (the last 4096 are kept;
    /// all of them when the id is unknown). Subscribed when it returns.
    ///
    /// A feed holds up to 10,000 events its reader has not taken; one that
    /// falls further behind ends with `LarderError.server(503, busy)` whose
    /// message names the last event delivered: resume with `after:` it. (The
    /// server drops a slow reader the same way; an unread feed must not grow forever.)
    public func changes(prefix: String, after eventID: String?) async throws -> AsyncThrowingStream<ChangeEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChangeEvent.self, throwing: (any Error).self,
                                                                    bufferingPolicy: .bufferingOldest(feedBuffer))
        guard let id = hub.subscribe(ChangeFeed(continuation, after: eventID), prefix: prefix, after: eventID) else {
            return stream
        }
        let hub = self.hub
        // Holds the larder until the stream ends, as `watch` does.
        continuation.onTermination = { _ in withExtendedLifetime(self) { hub.unsubscribe(id) } }
        return stream
    }
}
