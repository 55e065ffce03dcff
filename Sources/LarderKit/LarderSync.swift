import Foundation

/// The synchronous form of `ReadableLarder`, for code that is not async
/// (a command-line tool, a test's set-up). `EmbeddedLarder` implements both
/// forms; the HTTP client is async only, so that no thread waits on the network.
public protocol ReadableLarderSync: Sendable {
    var coder: LarderCoder { get }
    func fetch(_ key: String) throws -> StoredData
    func info(_ key: String) throws -> ValueInfo
    func listPage(prefix: String, after: String?, limit: Int, delimiter: Bool) throws -> ListingPage
}

/// The synchronous form of `WritableLarder`.
public protocol WritableLarderSync: Sendable {
    @discardableResult
    func save(_ data: Data, at key: String, contentType: String, condition: SaveCondition, ttl: Duration?) throws -> WriteResult
    @discardableResult
    func delete(_ key: String, condition: SaveCondition) throws -> Bool
    @discardableResult
    func removeAll(prefix: String) throws -> Int
    @discardableResult
    func append(json: Data, to key: String, unique: Bool, condition: SaveCondition) throws -> AppendResult
    @discardableResult
    func create(_ data: Data, under prefix: String, contentType: String, ttl: Duration?) throws -> WriteResult
}

extension ReadableLarderSync {
    /// The value under `key` decoded as `T`.
    public func fetch<T: Decodable>(_ type: T.Type = T.self, at key: String) throws -> T {
        try coder.decode(type, from: try fetch(key).data, key: key)
    }
}

extension WritableLarderSync where Self: ReadableLarderSync {
    /// Stores `value` as JSON under `key`.
    @discardableResult
    public func save<T: Encodable>(_ value: T, at key: String, ifMatch etag: String? = nil, ttl: Duration? = nil) throws -> WriteResult {
        try save(coder.encode(value, key: key), at: key, contentType: "application/json",
                 condition: etag.map(SaveCondition.ifMatch) ?? .none, ttl: ttl)
    }

    /// Appends `element` to the JSON list under `key`.
    @discardableResult
    public func append<T: Encodable>(_ element: T, to key: String, unique: Bool = false) throws -> AppendResult {
        try append(json: coder.encode([element], key: key), to: key, unique: unique, condition: .none)
    }
}
