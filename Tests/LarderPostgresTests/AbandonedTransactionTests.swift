import Foundation
@testable import LarderPostgres
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing

/// A server cut off from the database in the middle of a transaction
/// cannot say it is gone; the database ends that transaction itself once it
/// has sat idle for twice the statement allowance (`--pg-timeout`, and at
/// least 3 s), so its
/// key lock and the change feed's watermark are not held until the network
/// heals (PartitionTests cuts a real cable; this makes the idle gap certain).
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct AbandonedTransactionTests {
    @Test func aTransactionLeftIdleIsEndedByTheDatabase() async throws {
        // A server of its own: the transaction it leaves open would hold back every
        // other test's change feeds on a shared one (the mark is the whole server's).
        let database = try TestPostgres.makePrivate()
        var options = try PostgresStoreOptions(url: database.url(schema: TestPostgres.makeSchemaName()))
        options.commandTimeout = 3  // idle in a transaction: 6 s at most
        let connections = PostgresConnections(options: options, logger: .silent())
        connections.retain()
        defer { connections.release() }
        let pool = connections.pool

        // A transaction that keeps the database busy is not ended (one
        // round trip, its COMMIT with it: a loaded machine's pause between
        // statements cannot count as idle here).
        let xid: String?
        do {
            xid = try await pool.transaction(schema: "public") { db in
                try await db.query("SELECT pg_current_xact_id()::text, pg_sleep(0.2)", thenCommit: true).first?.string(0)
            }
        } catch {
            throw ClientError("a busy transaction failed: \(error)")
        }
        #expect(xid != nil)

        // One that goes quiet past the limit is ended by the database, and rolled back.
        let table = "abandoned_\(UInt32.random(in: 0...UInt32.max))"
        try database.psql("CREATE TABLE public.\(table) (n int)")
        var failure: (any Error)?
        do {
            try await pool.transaction(schema: "public") { db in
                _ = try await db.query("INSERT INTO \(table) VALUES (1)")
                try await Task.sleep(for: .seconds(9))
                _ = try await db.query("SELECT 1")
            }
        } catch {
            failure = error
        }
        let error = try #require(failure, "the database let a transaction sit idle past its limit")
        // libpq reports only that the server closed the connection; the limit it enforced is this one.
        #expect("\(error)".contains("closed the connection"), "\(error)")
        let limit: String?
        do {
            limit = try await pool.read(schema: "public") { db in
                try await db.query("SHOW idle_in_transaction_session_timeout").first?.string(0)
            }
        } catch {
            throw ClientError("reading the limit afterwards failed: \(error)")
        }
        #expect(limit == "6s")
        #expect(try database.psql("SELECT count(*) FROM public.\(table)") == "0")
    }
}
