import Foundation
import LarderModel
import LarderStorage
import LarderValueFile

/// How to reach and use the database (`--store postgres://…`).
public struct PostgresStoreOptions: Sendable {
    /// The URL as given: a libpq connection URI, plus Larder's own
    /// `schema` query parameter.
    public let url: String
    /// The URL without `schema`, as libpq takes it.
    public let conninfo: String
    /// The schema holding Larder's tables (`?schema=`, default `larder`),
    /// so several stores can share one database.
    public let schema: String
    /// Database connections this server keeps at most (`--pg-pool`).
    public var poolSize: Int = PostgresStoreOptions.defaultPoolSize
    /// zlib level for values the store compresses itself (1...9).
    public var gzipLevel: Int32 = CompressionMode.defaultGzipLevel
    /// Largest value, decompressed.
    public var maxValueSize: Int64 = ServerDefaults.maxValueSize
    /// Where uploads are encoded and large values read back to before
    /// they go out (unlinked files: bounded memory for any size).
    public var spoolDirectory: String = NSTemporaryDirectory()
    /// Values whose stored file is at most this big sit in their row;
    /// larger ones go in parts of this size.
    public var partSize: Int = 1 << 20
    /// Changes kept in `larder_changes` for `Last-Event-ID` replay.
    public var changeHistory: Int = ServerDefaults.changeHistory
    /// Seconds between sweeps of expired values.
    public var sweepInterval: Double = 1
    /// Seconds a statement may go without a byte of its answer before the
    /// connection is given up as dead (a database that stopped answering
    /// without closing): its request gets a 503 rather than a hang. A long
    /// read that keeps receiving is not cut.
    public var commandTimeout: Double = 10

    /// Database connections at most unless told (`--pg-pool`).
    public static let defaultPoolSize = 8

    /// Whether `url` names a PostgreSQL store (`postgres://` or `postgresql://`).
    public static func isPostgresURL(_ url: String) -> Bool {
        url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")
    }

    /// Parses `url`; throws `invalidURL` for one that is not a
    /// `postgres://` URL or names a schema that is not a plain identifier.
    public init(url: String) throws {
        guard Self.isPostgresURL(url), var components = URLComponents(string: url) else {
            // Not the URL itself: it may hold a password.
            throw PostgresStoreError.invalidURL("the store URL must be postgres://user:password@host:port/database")
        }
        var schema = "larder"
        if let items = components.queryItems {
            if let given = items.first(where: { $0.name == "schema" })?.value { schema = given }
            let rest = items.filter { $0.name != "schema" }
            components.queryItems = rest.isEmpty ? nil : rest
        }
        guard schema.utf8.count <= 40, let first = schema.utf8.first, first == UInt8(ascii: "_") || (0x61...0x7A).contains(first),
              schema.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }) else {
            throw PostgresStoreError.invalidURL("schema '\(schema)' must be a lowercase identifier of at most 40 characters")
        }
        // TCP keepalives unless the URL sets them: a listener on a network
        // that silently drops the connection finds out within a minute.
        var items = components.queryItems ?? []
        for (name, value) in [("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3")]
        where !items.contains(where: { $0.name == name }) {
            items.append(URLQueryItem(name: name, value: value))
        }
        components.queryItems = items
        guard let conninfo = components.string else { throw PostgresStoreError.invalidURL("the store URL cannot be parsed") }
        self.url = url
        self.conninfo = conninfo
        self.schema = schema
    }

    /// The URL with any password masked, for logs.
    public var redactedURL: String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "postgres://…"
    }
}

/// A PostgreSQL store that cannot start.
public enum PostgresStoreError: Error, CustomStringConvertible {
    case invalidURL(String)
    /// The database was reached, but its schema is from a newer Larder.
    case schemaTooNew(found: Int, known: Int)

    public var description: String {
        switch self {
        case .invalidURL(let why): return "--store: \(why)"
        case .schemaTooNew(let found, let known):
            return "the database holds Larder schema version \(found); this larder knows up to \(known): upgrade larder"
        }
    }
}

extension PostgresStore {
    /// Opens the PostgreSQL store `options` name when the server starts.
    public static func factory(options: PostgresStoreOptions) -> ValueStoreFactory {
        { changes, logger in try PostgresStore(options: options, logger: logger, changes: changes) }
    }
}
