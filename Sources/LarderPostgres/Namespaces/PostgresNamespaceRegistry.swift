import LarderStorage
import LarderSupport

/// Which schema holds each namespace's tables, in the database: the table
/// `larder_namespaces` in the default store's schema. Every server on the
/// database reads the same table, so namespace `w1` is the same schema (and
/// the same values) through any of them. A namespace's schema is named
/// after the default one and a number (`larder$ns7`): `$` cannot appear in a
/// schema given with `?schema=`, so it never meets another store's; the
/// name itself (up to 64 bytes) could not always fit in one of PostgreSQL's
/// 63-byte identifiers beside the default schema's name.
///
/// Each call blocks its thread for a round trip or two: they run when a
/// namespace is made, dropped or listed at start, not per request.
package final class PostgresNamespaceRegistry: Sendable {
    private let connections: PostgresConnections
    private let base: SchemaPool
    private let ready = Locked(false)
    /// Where a server that forgets a namespace says so, the schema as
    /// payload: the other servers close their store of it.
    private let channel: String

    /// The registry of the stores in `baseSchema` (the default store's
    /// schema) on `connections`.
    package init(connections: PostgresConnections, baseSchema: String) {
        self.connections = connections
        base = connections.pool(schema: baseSchema)
        channel = "larder_" + baseSchema + "$namespaces"
    }

    /// Calls `forgotten` with the schema of every namespace a server on
    /// the database forgets (this one too), until `stopWatching`.
    package func watch(_ forgotten: @escaping @Sendable (_ schema: String) -> Void) {
        connections.listener.subscribe(channel, PGListener.Subscriber(notified: forgotten, connected: {}))
    }

    package func stopWatching() { connections.listener.unsubscribe(channel) }

    /// Makes the registry's table once (under the schema migration's
    /// advisory lock, so servers starting together make it once).
    private func prepare() throws {
        try ready.withLock { (done: inout Bool) throws in
            guard !done else { return }
            let base = self.base
            try base.executor.blockingReply {
                try await base.transaction { db in
                    _ = try await db.query("SELECT pg_advisory_xact_lock(hashtext('larder.migrate.' || $1))", [.text(base.schema)])
                    _ = try await db.query("CREATE SCHEMA IF NOT EXISTS \"\(base.schema)\"")
                    _ = try await db.query("CREATE SEQUENCE IF NOT EXISTS larder_namespace_ids")
                    _ = try await db.query("""
                        CREATE TABLE IF NOT EXISTS larder_namespaces (
                            name text COLLATE "C" PRIMARY KEY,
                            schema text NOT NULL UNIQUE)
                        """)
                }
            }.get()
            done = true
        }
    }

    /// The namespaces the database holds, by name.
    package func names() throws -> [String] {
        try prepare()
        let base = self.base
        return try base.executor.blockingReply {
            try await base.read { db in
                try await db.query("SELECT name FROM larder_namespaces ORDER BY name").rows.compactMap { $0.string(0) }
            }
        }.get()
    }

    /// The schema of namespace `name`, given one now if it has none.
    package func schema(for name: String) throws -> String {
        try prepare()
        let base = self.base
        return try base.executor.blockingReply {
            try await base.transaction { db in
                _ = try await db.query("""
                    INSERT INTO larder_namespaces (name, schema) VALUES ($1, $2 || '$ns' || nextval('larder_namespace_ids'))
                    ON CONFLICT (name) DO NOTHING
                    """, [.text(name), .text(base.schema)])
                return try await db.query("SELECT schema FROM larder_namespaces WHERE name = $1", [.text(name)]).first!.string(0)!
            }
        }.get()
    }

    /// Takes namespace `name` out of the registry, if it still names
    /// `schema` (another server may have dropped it and made it again):
    /// from now on the name gets a new, empty schema. Every server hears of
    /// it (`watch`) when it commits.
    package func forget(_ name: String, schema: String) throws {
        let base = self.base, channel = self.channel
        try base.executor.blockingReply {
            try await base.withConnection { db in
                _ = try await db.query("""
                    WITH gone AS (DELETE FROM larder_namespaces WHERE name = $1 AND schema = $2 RETURNING schema)
                    SELECT pg_notify($3, schema) FROM gone
                    """, [.text(name), .text(schema), .text(channel)])
            }
        }.get()
    }

    /// Removes a forgotten namespace's schema and everything in it.
    package func remove(schema: String) throws {
        let base = self.base
        try base.executor.blockingReply {
            try await base.withConnection { db in
                _ = try await db.query("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
            }
        }.get()
    }
}
