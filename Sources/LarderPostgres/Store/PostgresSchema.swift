/// Larder's tables, and the migrations that make them, applied on start.
///
/// - `larder_state`: one row. Its `version` is the database-wide version
///   counter, and every write takes that row's lock first: writes (and
///   their conditions) are serialised, and versions are handed out in
///   commit order, so a reader of `larder_changes` that has seen version N
///   has seen every version below it. It also keeps the running totals.
/// - `larder_values`: one row per key (`COLLATE "C"`: byte order). `head`
///   is the value file's gzip header (Larder's metadata included); the rest
///   of the file is `body`, or, for a large value, the rows of
///   `larder_parts` under `blob`. So head and body are the bytes the disk
///   store keeps in its file. Neither is compressed again by TOAST
///   (`STORAGE EXTERNAL`): they are gzip already.
/// - `larder_changes`: the change feed, bounded to the last N versions;
///   `removed` is the version a delete or expiry removed.
enum PostgresSchema {
    /// The newest version this code knows.
    static let current = 3

    /// Migration `n` is `migrations[n - 1]`: statements run in one
    /// transaction, then `larder_schema_version` says `n`.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE larder_state (
                id int PRIMARY KEY CHECK (id = 1),
                version bigint NOT NULL,
                keys bigint NOT NULL,
                logical_bytes bigint NOT NULL,
                stored_bytes bigint NOT NULL)
            """,
            "INSERT INTO larder_state VALUES (1, 0, 0, 0, 0)",
            """
            CREATE TABLE larder_values (
                key text COLLATE "C" PRIMARY KEY,
                version bigint NOT NULL,
                size bigint NOT NULL,
                stored bigint NOT NULL,
                expires bigint,
                content_type text NOT NULL,
                modified bigint NOT NULL,
                head bytea NOT NULL,
                body bytea,
                blob bigint)
            """,
            "ALTER TABLE larder_values ALTER COLUMN head SET STORAGE EXTERNAL, ALTER COLUMN body SET STORAGE EXTERNAL",
            "CREATE INDEX larder_values_expires ON larder_values (expires) WHERE expires IS NOT NULL",
            "CREATE SEQUENCE larder_blobs",
            """
            CREATE TABLE larder_parts (
                blob bigint NOT NULL,
                part int NOT NULL,
                bytes bytea NOT NULL,
                PRIMARY KEY (blob, part))
            """,
            "ALTER TABLE larder_parts ALTER COLUMN bytes SET STORAGE EXTERNAL",
            """
            CREATE TABLE larder_changes (
                version bigint PRIMARY KEY,
                kind text NOT NULL,
                key text COLLATE "C",
                prefix text COLLATE "C",
                deleted bigint NOT NULL DEFAULT 0,
                size bigint)
            """,
        ],
        // 2: a delete's or expiry's event names the version it removed (its ETag).
        [
            "ALTER TABLE larder_changes ADD COLUMN removed bigint",
        ],
        // 3: the attributes another face keeps with a value (the S3 face's
        // ETag and headers), beside `head`, which holds them too, so that
        // conditions and listings need not read and parse the header.
        [
            "ALTER TABLE larder_values ADD COLUMN attributes bytea",
        ],
    ]

    /// Creates the schema if needed and brings it to `current`, under an
    /// advisory lock so that servers starting together migrate once.
    /// Throws `schemaTooNew` for a database a newer Larder migrated.
    static func migrate(_ pool: SchemaPool) async throws {
        let schema = pool.schema
        try await pool.transaction { db in
            _ = try await db.query("SELECT pg_advisory_xact_lock(hashtext('larder.migrate.' || $1))", [.text(schema)])
            _ = try await db.query("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"")
            _ = try await db.query("CREATE TABLE IF NOT EXISTS larder_schema_version (version int NOT NULL)")
            let found = Int(try await db.query("SELECT coalesce(max(version), 0)::int8 FROM larder_schema_version").first?.int(0) ?? 0)
            guard found <= current else { throw PostgresStoreError.schemaTooNew(found: found, known: current) }
            for n in (found + 1)..<(current + 1) {
                for statement in migrations[n - 1] { _ = try await db.query(statement) }
                _ = try await db.query("DELETE FROM larder_schema_version")
                _ = try await db.query("INSERT INTO larder_schema_version VALUES ($1)", [.int(Int64(n))])
            }
        }
    }
}
