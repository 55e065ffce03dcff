import Foundation

/// A `Larder` that keeps an app working offline: reads go to `primary` and,
/// when it cannot be reached (`LarderError.unreachable`, or a connection
/// lost mid-answer: a read's outcome is never in doubt), to JSON files
/// bundled with the app, one file per key (`<directory>/<key>.json`, or the
/// key's path as it is). Writes, listings and watches go to `primary` only.
public struct BundledFallback<Primary: Larder>: Larder {
    public let primary: Primary
    /// The folder of bundled files, e.g. `Bundle.module.resourceURL`.
    public let directory: URL

    public init(primary: Primary, directory: URL) {
        self.primary = primary
        self.directory = directory
    }

    public var coder: LarderCoder { primary.coder }

    public func fetch(_ key: String) async throws -> StoredData {
        do {
            return try await primary.fetch(key)
        } catch let error as LarderError where error.isOffline {
            guard let bundled = bundled(key) else { throw error }
            return bundled
        }
    }

    public func info(_ key: String) async throws -> ValueInfo {
        do {
            return try await primary.info(key)
        } catch let error as LarderError where error.isOffline {
            guard let bundled = bundled(key) else { throw error }
            return bundled.info
        }
    }

    /// The bundled file for `key`, as a value read from the fixture layer.
    public func bundled(_ key: String) -> StoredData? {
        guard !key.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }) else { return nil }
        for name in [key + ".json", key] {
            let url = directory.appendingPathComponent(name)
            guard let data = try? Data(contentsOf: url) else { continue }
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
            let modified = (attributes?[.modificationDate] as? Date).map(Timestamp.init) ?? Timestamp(nanoseconds: 0)
            let type = name.hasSuffix(".json") ? "application/json" : "application/octet-stream"
            let info = ValueInfo(key: key, size: data.count, storedSize: nil, contentType: type,
                                 etag: "\"bundled-\(data.count)-\(modified.nanoseconds)\"", modified: modified, source: .fixture)
            return StoredData(data: data, info: info)
        }
        return nil
    }

    public func listPage(prefix: String, after: String?, limit: Int, delimiter: Bool) async throws -> ListingPage {
        try await primary.listPage(prefix: prefix, after: after, limit: limit, delimiter: delimiter)
    }

    public func watch(_ key: String) -> AsyncThrowingStream<KeyState, any Error> { primary.watch(key) }

    public func changes(prefix: String, after eventID: String?) async throws -> AsyncThrowingStream<ChangeEvent, any Error> {
        try await primary.changes(prefix: prefix, after: eventID)
    }

    public func save(_ data: Data, at key: String, contentType: String, condition: SaveCondition, ttl: Duration?) async throws -> WriteResult {
        try await primary.save(data, at: key, contentType: contentType, condition: condition, ttl: ttl)
    }

    public func delete(_ key: String, condition: SaveCondition) async throws -> Bool {
        try await primary.delete(key, condition: condition)
    }

    public func removeAll(prefix: String) async throws -> Int { try await primary.removeAll(prefix: prefix) }

    public func append(json: Data, to key: String, unique: Bool, condition: SaveCondition) async throws -> AppendResult {
        try await primary.append(json: json, to: key, unique: unique, condition: condition)
    }

    public func create(_ data: Data, under prefix: String, contentType: String, ttl: Duration?) async throws -> WriteResult {
        try await primary.create(data, under: prefix, contentType: contentType, ttl: ttl)
    }
}

extension LarderError {
    /// The server could not be reached, or the connection was lost before
    /// the answer was whole: what `BundledFallback` falls back on.
    var isOffline: Bool {
        switch self {
        case .unreachable, .connectionLost: true
        default: false
        }
    }
}
