import LarderSupport
import LarderValueFile
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

/// The storage the routes depend on. `DiskStore` is the one built today; a
/// fixtures layer or another backend fits behind the same calls.
///
/// Calls are synchronous and run on the caller's thread (a connection's
/// queue); they may do disk I/O but never wait on other requests. Changes
/// are reported to the `StoreChangeObserver` the store was made with.
public protocol ValueStore: AnyObject, Sendable {
    /// Opens the value of `key`; `StoreError.notFound` when absent or expired.
    func open(_ key: StoreKey) throws -> StoredValue
    /// `open`, answering through `completion` (maybe on another thread):
    /// for a store whose reads are network round trips, the caller's
    /// thread does not wait.
    func open(_ key: StoreKey, then completion: @escaping @Sendable (Result<StoredValue, Error>) -> Void)
    /// Whether calls wait on another machine (a database): callers that can
    /// answer later use the `then:` forms.
    var answersLater: Bool { get }
    /// The metadata of the live value of `key` (nil: absent or expired),
    /// through `completion` (maybe on another thread): what a write
    /// condition is checked against before a body is asked for. A store
    /// whose reads are round trips reads the metadata alone, not the value.
    func currentMetadata(of key: StoreKey, then completion: @escaping @Sendable (Result<ValueMetadata?, Error>) -> Void)
    /// Starts writing `key`; `condition` is checked when the write publishes.
    func beginUpload(key: StoreKey, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?, condition: WriteCondition?) throws -> ValueWriter
    /// Reads the current value (nil: absent), lets `transform` make the new
    /// one, and publishes it only if nothing wrote the key in between
    /// (retrying otherwise) and `condition` holds: a read-modify-write that
    /// never loses a concurrent update. Values above `maxValueBytes` are refused.
    func update(_ key: StoreKey, condition: WriteCondition?, maxValueBytes: Int,
                _ transform: (_ current: ValueMetadata?, _ value: [UInt8]?) throws -> UpdatedValue) throws -> PutOutcome
    /// Deletes `key` if `condition` holds; returns whether it existed.
    func delete(_ key: StoreKey, condition: WriteCondition?) throws -> Bool
    /// Deletes every key under `prefix` (everything for the empty prefix); returns how many.
    func deletePrefix(_ prefix: StorePrefix) throws -> Int
    /// A page of keys under `prefix` in byte order.
    func list(prefix: StorePrefix, after: String?, limit: Int, groupByDirectory: Bool) throws -> StoreListing
    /// A new identifier, unique in this store and sorting after every one
    /// made before it (for generated keys).
    func makeUniqueID() throws -> String
    /// Starts writing a value under a new key below `prefix`: the prefix and
    /// an identifier as `makeUniqueID` makes them. The key is the one in
    /// the write's outcome (a store may give it when the write commits).
    func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                     expiresNanos: Int64?) throws -> ValueWriter
    /// Throws when the store cannot read and write.
    func checkHealth() throws
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
}

extension ValueStore {
    public func beginCreate(under prefix: StorePrefix, contentType: String, encoding: ValueUpload.Encoding,
                            expiresNanos: Int64?) throws -> ValueWriter {
        let key = try StoreKey(prefix.string + (try makeUniqueID()))
        return try beginUpload(key: key, contentType: contentType, encoding: encoding, expiresNanos: expiresNanos,
                               condition: WriteConditions.mustNotExist)
    }

    public func open(_ key: StoreKey, then completion: @escaping @Sendable (Result<StoredValue, Error>) -> Void) {
        completion(Result { try open(key) })
    }
    public var answersLater: Bool { false }

    public func currentMetadata(of key: StoreKey, then completion: @escaping @Sendable (Result<ValueMetadata?, Error>) -> Void) {
        open(key) { opened in
            switch opened {
            case .success(let value):
                let metadata = value.metadata
                value.close()
                completion(.success(metadata))
            case .failure(StoreError.notFound): completion(.success(nil))
            case .failure(let error): completion(.failure(error))
            }
        }
    }
    public var compressionModes: CompressionModeCounts? { nil }
    public var durability: DurabilityCounts? { nil }
    public var fixtureStats: StoreStats? { nil }
    public var isIndexReady: Bool { true }
}
