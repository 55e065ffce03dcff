import LarderSupport

/// What the stores of one database share: the connection pool and the
/// listening connection. The default store and every namespace's store of
/// a server use one of these, so a namespace costs no connection of its
/// own. Counted: each store `retain`s it when it opens and `release`s it
/// when it closes, and the last release closes the connections.
package final class PostgresConnections: Sendable {
    let pool: PGPool
    let listener: PGListener
    private let users = Locked(0)

    /// Connections to the database `options.conninfo` names (none opened
    /// yet), at most `options.poolSize` in the pool plus the listener.
    package init(options: PostgresStoreOptions, logger: Logger) {
        pool = PGPool(conninfo: options.conninfo, maxConnections: options.poolSize,
                      setup: ["SET application_name TO 'larder'",
                              // No NOTICEs on stderr ("schema already exists, skipping").
                              "SET client_min_messages TO warning",
                              // Every statement is prepared once per connection and shaped
                              // for a plan made without its parameters' values (the change
                              // feed's read, the listings: bounded index scans); left to
                              // choose, the database planned the writes' statements again
                              // on every run, about a fifth of its CPU on a write load.
                              "SET plan_cache_mode TO force_generic_plan",
                              // A server cut off mid-transaction cannot say it is gone: its
                              // transaction would hold its key's lock, and every server's
                              // change feed (the watermark), until the network heals. The
                              // database ends it after twice the statement allowance idle,
                              // and never under 3 s: a transaction also waits on this
                              // server's own work between statements (a JSON patch or
                              // append computed on a loaded machine).
                              "SET idle_in_transaction_session_timeout TO \(Int(Self.idleInTransactionLimit(options.commandTimeout) * 1000))"],
                      connectTimeout: max(1, min(5, options.commandTimeout)), commandTimeout: options.commandTimeout,
                      acquireTimeout: options.commandTimeout, logger: logger)
        listener = PGListener(pool: pool, logger: logger)
    }

    /// How long, in seconds, the database lets a transaction of this
    /// server sit idle before it ends it.
    static func idleInTransactionLimit(_ commandTimeout: Double) -> Double { max(3, commandTimeout * 2) }

    /// One more store (or registry) uses the connections.
    package func retain() { users.withLock { $0 += 1 } }

    /// One user fewer; the last one closes the connections.
    package func release() {
        let last = users.withLock { (n: inout Int) -> Bool in n -= 1; return n == 0 }
        guard last else { return }
        listener.stop()
        pool.close()
    }

    /// The pool, working in `schema`.
    func pool(schema: String) -> SchemaPool { SchemaPool(pool: pool, schema: schema) }
}

/// The shared pool as one store uses it: every call works in the store's
/// own schema.
struct SchemaPool: Sendable {
    let pool: PGPool
    let schema: String

    /// Where the tasks that use the pool run.
    var executor: PostgresExecutor { pool.executor }

    func withConnection<T>(_ body: (PGConnection) async throws -> T) async throws -> T {
        try await pool.withConnection(schema: schema, body)
    }

    func transaction<T>(_ body: (PGConnection) async throws -> T) async throws -> T {
        try await pool.transaction(schema: schema, body)
    }

    func read<T>(_ body: (PGConnection) async throws -> T) async throws -> T {
        try await pool.read(schema: schema, body)
    }
}
