/// Rows of a restore written by one statement, inside its transaction:
/// each column one array parameter (`PGArray`), `unnest`ed into rows, so
/// that the statement's text is the same for any number of rows (prepared
/// once per connection) and a restore of tens of thousands of values is a
/// few dozen statements, not one per value nor one too large to send.
///
/// The statement does for every row what a PUT's does for its own
/// (`PostgresStore.writeRow`): puts the row (a key already there is
/// updated in place), records a `put` change with the row's version,
/// adjusts the running totals by the difference, and deletes the parts of
/// the rows it replaces. Its keys must be distinct (an upsert may not
/// touch a row twice): the restore publishes each key's last value only.
struct RestoreBatch {
    /// Rows a statement carries at most, and the bytes of heads and bodies
    /// after which it goes out (a body is at most `partSize`, 1 MiB by
    /// default, so a statement stays within a few MiB).
    static let maxRows = 1000
    static let maxBytes = 4 << 20

    private var keys: [String?] = []
    private var versions: [Int64?] = []
    private var sizes: [Int64?] = []
    private var stored: [Int64?] = []
    private var expires: [Int64?] = []
    private var contentTypes: [String?] = []
    private var heads: [[UInt8]?] = []
    private var bodies: [[UInt8]?] = []
    private var blobs: [Int64?] = []
    private var attributes: [[UInt8]?] = []
    private var bytes = 0

    var isEmpty: Bool { keys.isEmpty }
    var isFull: Bool { keys.count >= Self.maxRows || bytes >= Self.maxBytes }

    /// Adds a value: its header stamped with `version`, and its body inline
    /// or its parts' `blob`.
    mutating func add(_ entry: RestoreSpool.Entry, version: Int64, head: [UInt8], body: [UInt8]?, blob: Int64?) {
        keys.append(entry.key)
        versions.append(version)
        sizes.append(entry.size)
        stored.append(entry.stored)
        expires.append(entry.expires)
        contentTypes.append(entry.contentType)
        heads.append(head)
        bodies.append(body)
        blobs.append(blob)
        attributes.append(entry.attributes)
        bytes += head.count + (body?.count ?? 0) + (entry.attributes?.count ?? 0)
    }

    /// The statement for the rows added, modified at `now`.
    func statement(now: Int64) -> PGConnection.Statement {
        PGConnection.Statement(sql: Self.sql, parameters: [
            PGArray.text(keys), PGArray.int8(versions), PGArray.int8(sizes), PGArray.int8(stored), PGArray.int8(expires),
            PGArray.text(contentTypes), PGArray.bytea(heads), PGArray.bytea(bodies), PGArray.int8(blobs),
            PGArray.bytea(attributes), .int(now),
        ])
    }

    /// `replaced` reads the rows as they were before the statement (every
    /// part of a statement sees one snapshot); its join names the key
    /// column's byte order (`COLLATE "C"`), which an `unnest`ed text lacks.
    private static let sql = """
        WITH incoming AS (
          SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::text[],
                               $7::bytea[], $8::bytea[], $9::int8[], $10::bytea[])
            AS n(key, version, size, stored, expires, content_type, head, body, blob, attributes)),
        replaced AS (
          SELECT v.size, v.stored, v.blob FROM larder_values v JOIN incoming i ON v.key = i.key COLLATE "C"),
        up AS (
          INSERT INTO larder_values (key, version, size, stored, expires, content_type, modified, head, body, blob, attributes)
          SELECT key, version, size, stored, expires, content_type, $11::int8, head, body, blob, attributes FROM incoming
          ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, size = EXCLUDED.size, stored = EXCLUDED.stored,
            expires = EXCLUDED.expires, content_type = EXCLUDED.content_type, modified = EXCLUDED.modified,
            head = EXCLUDED.head, body = EXCLUDED.body, blob = EXCLUDED.blob, attributes = EXCLUDED.attributes),
        totals AS (\(WriteLocks.addToTotals(
            keys: "((SELECT count(*) FROM incoming) - (SELECT count(*) FROM replaced))::int8",
            logical: "((SELECT coalesce(sum(size), 0) FROM incoming) - (SELECT coalesce(sum(size), 0) FROM replaced))::int8",
            stored: "((SELECT coalesce(sum(stored), 0) FROM incoming) - (SELECT coalesce(sum(stored), 0) FROM replaced))::int8"))),
        change AS (INSERT INTO larder_changes (version, kind, key, size) SELECT version, 'put', key, size FROM incoming),
        parts AS (DELETE FROM larder_parts WHERE blob IN (SELECT blob FROM replaced WHERE blob IS NOT NULL))
        SELECT count(*) FROM incoming
        """
}
