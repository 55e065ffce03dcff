import Foundation

/// A type that knows where it is kept and saves, loads, deletes and appends
/// itself through any `Larder`, embedded or over HTTP: the "tiny
/// persistence" shape.
///
/// ```swift
/// struct Settings: Persistible {
///     static let larderKey = "settings"
///     var theme = "dark"
/// }
/// try await Settings(theme: "light").save(to: larder)
/// let settings: Settings = try await Settings.load(from: larder)
/// ```
public protocol Persistible: Codable, Sendable {
    /// The key values of this type are kept under: the one value of its
    /// kind, or the list that `append(to:)` grows.
    static var larderKey: String { get }
    /// This value's own key; by default `Self.larderKey`.
    var larderKey: String { get }
}

extension Persistible {
    public var larderKey: String { Self.larderKey }

    /// Saves this value as JSON under its key.
    @discardableResult
    public func save(to larder: some Larder) async throws -> WriteResult {
        try await larder.save(self, at: larderKey)
    }

    /// Deletes the value under this value's key; whether there was one.
    @discardableResult
    public func delete(from larder: some Larder) async throws -> Bool {
        try await larder.delete(larderKey)
    }

    /// The value stored under `key` (by default the type's key). The same
    /// call returns a list when the result is typed `[Self]`:
    /// `let all: [Post] = try await Post.load(from: larder)`.
    public static func load(_ key: String = Self.larderKey, from larder: some ReadableLarder) async throws -> Self {
        try await larder.fetch(Self.self, at: key)
    }

    /// The list stored under `key` (by default the type's key); a single
    /// value stored there loads as a list of one, and no value as an empty list.
    public static func load(_ key: String = Self.larderKey, from larder: some ReadableLarder) async throws -> [Self] {
        guard let stored = try await larder.fetchIfPresent(key) else { return [] }
        // A JSON array is the list; anything else is one value. Deciding by
        // the first byte keeps the real decoding error for either.
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        if stored.data.first(where: { !whitespace.contains($0) }) == UInt8(ascii: "[") {
            return try larder.coder.decode([Self].self, from: stored.data, key: key)
        }
        return [try larder.coder.decode(Self.self, from: stored.data, key: key)]
    }
}

extension Persistible where Self: Equatable {
    /// Appends this value to the list of its kind, under the type's key
    /// (`Self.larderKey`, not an instance's own key), unless an equal one
    /// (the same JSON) is already in it; the list's length after.
    @discardableResult
    public func append(to larder: some Larder) async throws -> Int {
        try await larder.append(self, to: Self.larderKey, unique: true).count
    }
}
