import LarderValueFile
import LarderModel
/// One change to the store, as the change feed and watchers see it. Emitted
/// by the store from under the key's write barrier (or, for a bulk delete,
/// the root barrier), so for any one key changes arrive in the order they
/// took effect.
public struct StoreChange: Sendable {
    public enum Kind: String, Sendable {
        case put, delete, expire
    }
    public let kind: Kind
    /// The key changed; nil for a bulk delete.
    public let key: String?
    /// For a bulk delete: the prefix (`""` for everything) and how many keys went.
    public let prefix: String?
    public let deleted: Int
    /// The version the change is known by: the new value's for a put, a
    /// fresh one for a delete or expiry. Unique and increasing per store.
    public let version: UInt64
    /// ETag of the new value for a put; of the value removed for a delete
    /// or expiry (nil when that value's metadata could not be read).
    /// Size of the new value (puts only).
    public let etag: String?
    public let size: UInt64?
    /// For a put: which layer the key now reads from. A store value removed
    /// over a fixture is reported as a put of the fixture (`.fixture`).
    public var source: ValueSource = .store
    /// For a bulk delete: fixtures under the prefix, which the keys read as now.
    public var fixtures: Int = 0
    /// Changes before this one may never have been reported: a PostgreSQL
    /// server's feed fell further behind than the database keeps changes
    /// (`--event-history`). Whoever mirrors the store must list it again;
    /// the change hub tells its subscribers so with a `reset`.
    public var followsGap = false

    public static func put(_ meta: ValueMetadata) -> StoreChange {
        StoreChange(kind: .put, key: meta.key, prefix: nil, deleted: 0, version: meta.version, etag: meta.etag, size: meta.size)
    }

    /// `key` lost its store value and reads as its fixture again.
    public static func reverted(_ key: String, to fixture: ValueMetadata, version: UInt64) -> StoreChange {
        StoreChange(kind: .put, key: key, prefix: nil, deleted: 0, version: version, etag: fixture.etag,
                    size: fixture.size, source: .fixture)
    }

    /// `key`'s value, version `removed`, was deleted (or expired).
    public static func delete(_ key: String, removed: UInt64?, version: UInt64, expired: Bool = false) -> StoreChange {
        StoreChange(kind: expired ? .expire : .delete, key: key, prefix: nil, deleted: 1, version: version,
                    etag: removed.map(ValueMetadata.etag(version:)), size: nil)
    }

    public static func deletePrefix(_ prefix: String, deleted: Int, version: UInt64) -> StoreChange {
        StoreChange(kind: .delete, key: nil, prefix: prefix, deleted: deleted, version: version, etag: nil, size: nil)
    }

    /// The version as the change feed's event id (16 hex digits, like ETags).
    public var id: String { VersionHex.hex(version) }

    /// Whether this change touches keys under `prefix` (a bulk delete
    /// touches every subscriber whose prefix overlaps its own).
    public func concerns(prefix subscribed: String) -> Bool {
        if let key { return key.utf8.starts(with: subscribed.utf8) }
        guard let prefix else { return false }
        return prefix.utf8.starts(with: subscribed.utf8) || subscribed.utf8.starts(with: prefix.utf8)
    }
}

/// Receives every change. Called from under a write barrier: it must only
/// record the change and hand any real work to another queue.
public protocol StoreChangeObserver: AnyObject, Sendable {
    func storeDidChange(_ change: StoreChange)
}

extension StoreChange {
    /// The change as the change feed's `data:` object.
    public var data: ChangeData {
        if let key {
            return ChangeData(key: key, etag: etag, size: size.map { Int($0) }, source: source == .fixture ? .fixture : nil)
        }
        return ChangeData(prefix: prefix ?? "", deleted: deleted, fixtures: fixtures > 0 ? fixtures : nil)
    }

    /// The change as a client of the feed sees it.
    public var event: ChangeEvent {
        ChangeEvent(id: id, kind: ChangeEvent.Kind(rawValue: kind.rawValue)!, data: data)
    }
}
