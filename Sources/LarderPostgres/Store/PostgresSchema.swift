/// Larder's tables, and the migrations that make them, applied on start.
///
/// - `larder_state`: one row, `version_base`, from which versions are made
///   (see `WriteLocks`: a write's version is its transaction's id over that
///   base, so versions follow the order of the ids, past every version of
///   before migration 4, when they followed one lock row).
/// - `larder_totals`: the running totals, in shards (a transaction adds to
///   its backend's), so concurrent writers do not queue for one row.
/// - `larder_values`: one row per key (`COLLATE "C"`: byte order). `head`
///   is the value file's gzip header (Larder's metadata included); the rest
///   of the file is `body`, or, for a large value, the rows of
///   `larder_parts` under `blob`. So head and body are the bytes the disk
///   store keeps in its file. Neither is compressed again by TOAST
///   (`STORAGE EXTERNAL`): they are gzip already.
/// - `larder_state.clock_offset`, `clock_frozen_at`: the namespace's
///   clock (`StoreClock.State`), which every server's copy follows.
/// - `larder_changes`: the change feed, bounded to the last N versions;
///   `removed` is the version a delete or expiry removed. Trimming it
///   raises `larder_state.trimmed_through` to the newest version it
///   deleted: a feed that has not delivered that far lost changes.
enum PostgresSchema {
    /// The newest version this code knows.
    static let current = 6

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
        // 4: writes lock their key, not one row (see `WriteLocks`): the
        // version comes from the transaction id, above every version so far
        // and the clock; the totals move to shards.
        [
            "ALTER TABLE larder_state ADD COLUMN version_base bigint",
            """
            UPDATE larder_state SET version_base = greatest(version, (extract(epoch FROM clock_timestamp()) * 1e9)::int8)
              + 1 - pg_current_xact_id()::text::int8 * \(WriteLocks.versionsPerTransaction)
            """,
            """
            CREATE TABLE larder_totals (
                shard int PRIMARY KEY,
                keys bigint NOT NULL,
                logical_bytes bigint NOT NULL,
                stored_bytes bigint NOT NULL)
            """,
            "INSERT INTO larder_totals SELECT 0, keys, logical_bytes, stored_bytes FROM larder_state",
            "ALTER TABLE larder_state DROP COLUMN version, DROP COLUMN keys, DROP COLUMN logical_bytes, DROP COLUMN stored_bytes",
            "ALTER TABLE larder_state ALTER COLUMN version_base SET NOT NULL",
        ],
        // 5: the newest version the change table's trim deleted (see `PostgresChangeFeed`).
        [
            "ALTER TABLE larder_state ADD COLUMN trimmed_through bigint NOT NULL DEFAULT 0",
        ],
        // 6: the namespace's clock, shared by every server on the database
        // (`PostgresStore+Clock`): an offset from the system clock, or the
        // time it stands at while frozen.
        [
            "ALTER TABLE larder_state ADD COLUMN clock_offset bigint NOT NULL DEFAULT 0, ADD COLUMN clock_frozen_at bigint",
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
