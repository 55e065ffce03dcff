import Foundation
@_exported import LarderModel

/// Reading a Larder store: the half of `Larder` that never changes a value.
///
/// Two types implement it with one shape: `EmbeddedLarder` (module
/// `LarderEmbedded`), the server's own disk store in this process, and
/// `LarderClient` (module `LarderClient`), the HTTP API over `URLSession`.
/// Keys are paths (`users/1/avatar`) with the rules of docs/http-api.md.
public protocol ReadableLarder: Sendable {
    /// How `Codable` values become bytes and back (JSON, ISO 8601 dates by default).
    var coder: LarderCoder { get }

    /// The value under `key` with what is known about it.
    /// - Throws: `LarderError.notFound` when the key is absent or expired.
    func fetch(_ key: String) async throws -> StoredData

    /// What is known about the value under `key`, without its bytes.
    /// - Throws: `LarderError.notFound` when the key is absent or expired.
    func info(_ key: String) async throws -> ValueInfo

    /// One page of the keys under `prefix` (`""` for all, else ending in
    /// `/`) in byte order, starting after `after`. With `delimiter`, keys
    /// deeper than one level fold into `ListingPage.prefixes`.
    /// Use `list(prefix:delimiter:pageSize:)` to walk every page.
    func listPage(prefix: String, after: String?, limit: Int, delimiter: Bool) async throws -> ListingPage

    /// The state of `key` now, then after each change: `.present` with the
    /// new value or `.absent`. States between two reads may be skipped, never
    /// reordered. The sequence ends when the task is cancelled or the
    /// consumer stops iterating; it throws when the store cannot be read.
    func watch(_ key: String) -> AsyncThrowingStream<KeyState, any Error>

    /// Every change under `prefix` from now on (or, with `after`, from just
    /// after that event id, as far back as the store remembers), in order.
    /// Returns once subscribed: a change made after it returns is in the
    /// sequence. The sequence ends when the consumer stops iterating.
    func changes(prefix: String, after eventID: String?) async throws -> AsyncThrowingStream<ChangeEvent, any Error>
}

/// Changing a Larder store: the half of `Larder` that writes.
public protocol WritableLarder: Sendable {
    /// Stores `data` under `key` with `contentType`, if `condition` holds.
    /// `ttl` makes the value expire (whole seconds, rounded up).
    /// - Throws: `LarderError.preconditionFailed` when `condition` does not hold.
    @discardableResult
    func save(_ data: Data, at key: String, contentType: String, condition: SaveCondition, ttl: Duration?) async throws -> WriteResult

    /// Deletes `key` if `condition` holds; whether there was a value.
    @discardableResult
    func delete(_ key: String, condition: SaveCondition) async throws -> Bool

    /// Deletes every key under `prefix` (`""`: everything); how many went.
    @discardableResult
    func removeAll(prefix: String) async throws -> Int

    /// Appends JSON to the JSON array under `key`, in one step no other
    /// writer can interleave with (docs/http-api.md: a JSON array appends each element;
    /// an absent key starts a list). With `unique`, elements already present
    /// (JSON equality) are skipped.
    /// - Throws: `LarderError.notJSON` when the stored value is not JSON.
    @discardableResult
    func append(json: Data, to key: String, unique: Bool, condition: SaveCondition) async throws -> AppendResult

    /// Stores `data` under a new key `<prefix><id>`: unique, and sorting after
    /// every key generated before it. `prefix` is `""` or ends in `/`.
    @discardableResult
    func create(_ data: Data, under prefix: String, contentType: String, ttl: Duration?) async throws -> WriteResult
}

/// A Larder store, embedded or over HTTP: read, write, list, watch.
public protocol Larder: ReadableLarder, WritableLarder {}

extension ReadableLarder {
    /// Every page of the keys under `prefix`, fetched as the sequence is iterated.
    public func list(prefix: String = "", delimiter: Bool = false, pageSize: Int = 1000) -> ListingPages {
        ListingPages(pageSize: pageSize) { after, limit in
            try await self.listPage(prefix: prefix, after: after, limit: limit, delimiter: delimiter)
        }
    }

    /// Every change under `prefix` from now on (subscribed when it returns).
    public func changes(prefix: String = "") async throws -> AsyncThrowingStream<ChangeEvent, any Error> {
        try await changes(prefix: prefix, after: nil)
    }

    /// The value under `key`, or nil when there is none.
    public func fetchIfPresent(_ key: String) async throws -> StoredData? {
        do {
            return try await fetch(key)
        } catch LarderError.notFound {
            return nil
        }
    }
}

extension WritableLarder {
    /// The longest TTL a value can have, in seconds: 100 years, the cap of the
    /// server's `?ttl=`. Both stores cap a longer `ttl` here rather than
    /// refuse it, so the same call succeeds embedded and over HTTP.
    public static var maximumTTLSeconds: Int64 { ExpiryLimit.maximumTTLSeconds }

    /// Stores `data` under `key` (`application/octet-stream` unless told).
    @discardableResult
    public func save(_ data: Data, at key: String, contentType: String = "application/octet-stream",
                     ifMatch etag: String? = nil, ttl: Duration? = nil) async throws -> WriteResult {
        try await save(data, at: key, contentType: contentType, condition: etag.map(SaveCondition.ifMatch) ?? .none, ttl: ttl)
    }

    /// Deletes `key`; whether there was a value.
    @discardableResult
    public func delete(_ key: String, ifMatch etag: String? = nil) async throws -> Bool {
        try await delete(key, condition: etag.map(SaveCondition.ifMatch) ?? .none)
    }

    /// Deletes every value.
    @discardableResult
    public func removeAll() async throws -> Int { try await removeAll(prefix: "") }
}
