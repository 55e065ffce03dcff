import Foundation

/// A value's bytes with what is known about them.
public struct StoredData: Sendable, Hashable {
    public var data: Data
    public var info: ValueInfo

    public init(data: Data, info: ValueInfo) {
        self.data = data
        self.info = info
    }

    public var key: String { info.key }
    /// The version, for `SaveCondition.ifMatch`.
    public var etag: String { info.etag }
    public var contentType: String { info.contentType }
}

/// What a write left behind.
public struct WriteResult: Sendable, Hashable {
    /// The key written (the generated one, for `create`).
    public var key: String
    /// The new version, for `SaveCondition.ifMatch`.
    public var etag: String
    /// Whether the key had no value before.
    public var created: Bool

    public init(key: String, etag: String, created: Bool) {
        self.key = key
        self.etag = etag
        self.created = created
    }
}

/// What an append left behind.
public struct AppendResult: Sendable, Hashable {
    /// The list's length after the append.
    public var count: Int
    /// The list's new version.
    public var etag: String

    public init(count: Int, etag: String) {
        self.count = count
        self.etag = etag
    }
}

/// A watched key's state.
public enum KeyState: Sendable, Hashable {
    case present(StoredData)
    case absent

    /// The value, if there is one.
    public var value: StoredData? {
        if case .present(let v) = self { return v }
        return nil
    }
}
