import Foundation

extension ReadableLarder {
    /// The value under `key` decoded as `T` with `coder`.
    /// - Throws: `LarderError.notFound`, or `.cannotDecode` when the bytes are not a `T`.
    public func fetch<T: Decodable>(_ type: T.Type = T.self, at key: String) async throws -> T {
        try coder.decode(type, from: try await fetch(key).data, key: key)
    }

    /// The value under `key` decoded as `T` with its version, for a later
    /// `save(_:at:ifMatch:)`.
    public func fetchVersioned<T: Decodable>(_ type: T.Type = T.self, at key: String) async throws -> (value: T, etag: String) {
        let stored = try await fetch(key)
        return (try coder.decode(type, from: stored.data, key: key), stored.etag)
    }

    /// The value under `key` decoded as `T`, or nil when there is none.
    public func fetchIfPresent<T: Decodable>(_ type: T.Type = T.self, at key: String) async throws -> T? {
        guard let stored = try await fetchIfPresent(key) else { return nil }
        return try coder.decode(type, from: stored.data, key: key)
    }
}

extension WritableLarder where Self: ReadableLarder {
    /// Stores `value` as JSON (`application/json`) under `key`.
    @discardableResult
    public func save<T: Encodable>(_ value: T, at key: String, ifMatch etag: String? = nil,
                                   ttl: Duration? = nil) async throws -> WriteResult {
        try await save(coder.encode(value, key: key), at: key, contentType: "application/json",
                       condition: etag.map(SaveCondition.ifMatch) ?? .none, ttl: ttl)
    }

    /// Stores `value` as JSON under `key` only if the key has no value.
    /// - Throws: `LarderError.preconditionFailed` when it has one.
    @discardableResult
    public func saveIfAbsent<T: Encodable>(_ value: T, at key: String, ttl: Duration? = nil) async throws -> WriteResult {
        try await save(coder.encode(value, key: key), at: key, contentType: "application/json", condition: .ifAbsent, ttl: ttl)
    }

    /// Appends `element` to the JSON list under `key` (an absent key starts
    /// one). With `unique`, an element whose JSON equals one already in the
    /// list is skipped. An array `element` appends as one element.
    @discardableResult
    public func append<T: Encodable>(_ element: T, to key: String, unique: Bool = false) async throws -> AppendResult {
        // The API appends each element of an array body; wrapping keeps an
        // array value one element, as a Swift caller means it.
        let body = try coder.encode([element], key: key)
        return try await append(json: body, to: key, unique: unique, condition: .none)
    }

    /// Appends each of `elements` to the JSON list under `key`, in one step.
    @discardableResult
    public func append<T: Encodable>(contentsOf elements: [T], to key: String, unique: Bool = false) async throws -> AppendResult {
        try await append(json: coder.encode(elements, key: key), to: key, unique: unique, condition: .none)
    }

    /// Stores `value` as JSON under a new generated key `<prefix><id>`.
    @discardableResult
    public func create<T: Encodable>(_ value: T, under prefix: String, ttl: Duration? = nil) async throws -> WriteResult {
        try await create(coder.encode(value, key: prefix), under: prefix, contentType: "application/json", ttl: ttl)
    }
}
