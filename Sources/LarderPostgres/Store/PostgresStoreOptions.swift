import FoundationEssentials
import LarderModel
import LarderStorage
import LarderSupport
import LarderValueFile

/// How to reach and use the database (`--store postgres://…`).
package struct PostgresStoreOptions: Sendable {
    /// The URL as given: a libpq connection URI, plus Larder's own
    /// `schema` query parameter.
    package let url: String
    /// The URL without `schema`, as libpq takes it.
    package let conninfo: String
    /// The schema holding Larder's tables (`?schema=`, default `larder`),
    /// so several stores can share one database.
    package let schema: String
    /// Database connections this server keeps at most (`--pg-pool`).
    package var poolSize: Int = PostgresStoreOptions.defaultPoolSize
    /// zlib level for values the store compresses itself (1...9).
    package var gzipLevel: Int32 = CompressionMode.defaultGzipLevel
    /// Largest value, decompressed.
    package var maxValueSize: Int64 = ServerDefaults.maxValueSize
    /// Where uploads are encoded and large values read back to before
    /// they go out (unlinked files: bounded memory for any size).
    package var spoolDirectory: String = TemporaryDirectory.path
    /// Values whose stored file is at most this big sit in their row;
    /// larger ones go in parts of this size.
    package var partSize: Int = 1 << 20
    /// Changes kept in `larder_changes` for `Last-Event-ID` replay.
    package var changeHistory: Int = ServerDefaults.changeHistory
    /// Seconds between sweeps of expired values.
    package var sweepInterval: Double = 1
    /// Seconds a statement may go without a byte of its answer before the
    /// connection is given up as dead (a database that stopped answering
    /// without closing, a cut network): its request gets a 503 rather than
    /// a hang (`--pg-timeout`). A long read that keeps receiving is not
    /// cut. The same bound holds for waiting for a free connection, a new
    /// connection gets at most 5 s of it, and a `COMMIT` six times it (a
    /// flush under load may legitimately be slow, and a commit given up on
    /// is an unknown outcome).
    package var commandTimeout: Double = PostgresStoreOptions.defaultCommandTimeout

    /// Bytes of small values each store keeps in memory for reads
    /// (`--pg-cache-mb`); 0, the default, reads every value from the
    /// database. A cached read may miss a write through another server
    /// until this server's change feed has read it (`PostgresReadCache`).
    package var cacheBytes: Int = 0

    /// `--pg-timeout` unless told.
    package static let defaultCommandTimeout: Double = 10

    /// Database connections at most unless told (`--pg-pool`).
    package static let defaultPoolSize = 8

    /// Whether `url` names a PostgreSQL store (`postgres://` or `postgresql://`).
    package static func isPostgresURL(_ url: String) -> Bool { ConnectionSettings.isURI(url) }

    /// Parses `url`: a `postgres://` or `postgresql://` URI (with several
    /// `host:port`s for failover, `target_session_attrs`, any parameter
    /// libpq knows) or libpq `keyword=value` settings; Larder's own `schema`
    /// (default `larder`) is taken out, and libpq checks the rest.
    /// - Throws: `invalidURL` for what libpq refuses or a schema that is
    ///   not a plain identifier.
    package init(url: String) throws {
        guard Self.isPostgresURL(url) || url.contains("=") else {
            // Not the value itself: it may hold a password.
            throw PostgresStoreError.invalidURL(
                "the store must be a postgres:// URL (postgres://user:password@host:port/database) or libpq keyword=value settings")
        }
        let settings = try ConnectionSettings(url)
        let schema = settings.schema ?? "larder"
        guard schema.utf8.count <= 40, let first = schema.utf8.first, first == UInt8(ascii: "_") || (0x61...0x7A).contains(first),
              schema.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) }) else {
            throw PostgresStoreError.invalidURL("schema '\(schema)' must be a lowercase identifier of at most 40 characters")
        }
        self.url = url
        self.conninfo = settings.conninfo
        self.schema = schema
    }

    /// The value with any password masked, for logs: the URI's user
    /// information, a `password` parameter or setting.
    package var redactedURL: String {
        var text = url
        let patterns = [
            #"^(postgres(?:ql)?://[^:@/?]*:)[^@/?]*@"#,                // postgres://user:secret@
            #"([?&]password=)[^&]*"#,                                    // ?password=secret
            #"((?:^|\s)password\s*=\s*)(?:'(?:[^'\\]|\\.)*'|\S+)"#,  // password = 'se cret'
        ]
        for (index, pattern) in patterns.enumerated() {
            guard let regex = try? Regex(pattern) else { continue }
            let mask = index == 0 ? "***@" : "***"
            text = text.replacing(regex) { match in (match.output[1].substring.map(String.init) ?? "") + mask }
        }
        return text
    }
}

/// A PostgreSQL store that cannot start.
package enum PostgresStoreError: Error, CustomStringConvertible {
    case invalidURL(String)
    /// libpq, loaded on the store's first use, is not there (or too old).
    case libpqMissing(String)
    /// The database was reached, but its schema is from a newer Larder.
    case schemaTooNew(found: Int, known: Int)

    package var description: String {
        switch self {
        case .invalidURL(let why): return "--store: \(why)"
        case .libpqMissing(let why): return "--store: \(why)"
        case .schemaTooNew(let found, let known):
            return "the database holds Larder schema version \(found); this larder knows up to \(known): upgrade larder"
        }
    }
}

extension PostgresStore {
    /// Opens the PostgreSQL store `options` name when the server starts.
    package static func factory(options: PostgresStoreOptions) -> ValueStoreFactory {
        { changes, logger in try PostgresStore(options: options, logger: logger, changes: changes) }
    }
}
