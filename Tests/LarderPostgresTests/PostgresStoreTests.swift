import Foundation
import LarderApp
import LarderRouting
import LarderServer
import LarderPostgres
import LarderDiskStore
import LarderStorage
import LarderValueFile
import LarderTestSupport
import LarderWire
import LarderSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What is particular to the PostgreSQL store, against a real server in
/// this process on the throwaway database (the API suites cover the rest
/// when run with `LARDER_TEST_STORE=postgres`).
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct PostgresStoreTests {
    static func server(schema: String = TestPostgres.makeSchemaName(),
                       _ configure: (inout TestServer.Setup) -> Void = { _ in }) throws -> TestServer {
        try TestServer(postgresSchema: schema, configure)
    }

    @Test func aLargeValueGoesInPartsAndComesBackWhole() throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = server.client()
        // Incompressible and larger than three parts: the parts table holds it.
        let value = Bytes.random(count: 3 * (1 << 20) + 12_345, seed: 7)
        #expect(try client.put("big/blob", value).status == 201)
        let schema = try #require(server.postgresSchema)
        let database = try TestPostgres.shared()
        #expect(try database.psql("SELECT count(*) FROM \(schema).larder_parts") == "4")
        // Parts are written before the key's lock; a write refused under it drops its own.
        #expect(try client.put("big/blob", value, headers: [("If-None-Match", "*")]).status == 412)
        #expect(try database.psql("SELECT count(*) FROM \(schema).larder_parts") == "4")
        #expect(try database.psql("SELECT body IS NULL FROM \(schema).larder_values WHERE key = 'big/blob'") == "t")
        #expect(try client.get("big/blob").body == value)
        // The stored gzip form of random bytes is larger than they are, so a
        // client that takes gzip gets the value itself (API.md allows it).
        let gzip = try client.get("big/blob", headers: [("Accept-Encoding", "gzip")])
        #expect(gzip.header("Content-Encoding") == nil)
        #expect(gzip.body == value)
        let range = try client.get("big/blob", headers: [("Range", "bytes=1048570-1048600")])
        #expect(range.status == 206)
        #expect(range.body == Array(value[1_048_570...1_048_600]))
        // Replaced by a small value: the parts go.
        #expect(try client.put("big/blob", "small").status == 204)
        #expect(try database.psql("SELECT count(*) FROM \(schema).larder_parts") == "0")
        #expect(try client.get("big/blob").text == "small")
    }

    @Test func createOnlyWritesRacingThroughTwoServersHaveOneWinner() throws {
        let schema = TestPostgres.makeSchemaName()
        let a = try Self.server(schema: schema), b = try Self.server(schema: schema)
        defer { a.stop(); b.stop() }
        let ports = [a.port, b.port]
        for round in 0..<20 {
            let statuses = Locked<[Int]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { i in
                let port = ports[i % 2]
                let status = (try? WireClient(port: port).put("race/\(round)", Array("writer \(i)".utf8),
                                                                headers: [("If-None-Match", "*")]))?.status ?? -1
                statuses.withLock { $0.append(status) }
            }
            let all = statuses.withLock { $0 }
            #expect(all.filter { $0 == 201 }.count == 1, "round \(round): \(all)")
            #expect(all.filter { $0 == 412 }.count == 7, "round \(round): \(all)")
        }
    }

    @Test func totalsAndTheSchemaVersionAreTheDatabases() throws {
        let schema = TestPostgres.makeSchemaName()
        let a = try Self.server(schema: schema)
        defer { a.stop() }
        let database = try TestPostgres.shared()
        #expect(try database.psql("SELECT version FROM \(schema).larder_schema_version") == "6")
        _ = try a.client().put("t/1", "12345")
        _ = try a.client().put("t/2", "123")
        // A second server on the same schema migrates nothing and reports the same totals.
        let b = try Self.server(schema: schema)
        defer { b.stop() }
        #expect(try database.psql("SELECT count(*) FROM \(schema).larder_schema_version") == "1")
        try Poll.until(30, "the second server to count 2 keys") { try b.client().send("GET", "/metrics").text.contains("\nlarder_keys 2\n") }
        #expect(try b.client().send("GET", "/metrics").text.contains("\nlarder_logical_bytes 8\n"))
        #expect(try b.client().deletePrefix("").status == 200)
        try Poll.until(30, "the reset to reach the first server") { try a.client().send("GET", "/metrics").text.contains("\nlarder_keys 0\n") }
    }

    /// A PUT with no condition is one statement (`writeRowInOneTrip`),
    /// which judges the row it replaces itself: one that expired but is not
    /// swept yet is absent to the client (201) and still a key in the
    /// totals (replaced, so the count stays), and the new value's header
    /// carries the version the ETag names.
    @Test func aPutOverAnExpiredRowNotYetSweptIsACreateAndKeepsTheKeyCount() throws {
        let schema = TestPostgres.makeSchemaName()
        let server = try Self.server(schema: schema)
        defer { server.stop() }
        let client = server.client()
        let database = try TestPostgres.shared()
        #expect(try client.put("exp/k", "old").status == 201)
        #expect(try client.put("live/k", "stays").status == 201)
        // Expired long ago, as far as the row says; the sweep (every second)
        // has not seen it yet when the PUT right after this comes.
        _ = try database.psql("UPDATE \(schema).larder_values SET expires = 1 WHERE key = 'exp/k'")
        let put = try client.put("exp/k", "new")
        #expect(put.status == 201, "a PUT over an expired row answered \(put.status)")
        #expect(try database.psql("SELECT coalesce(sum(keys), 0) FROM \(schema).larder_totals") == "2")
        #expect(try database.psql("SELECT count(*) FROM \(schema).larder_values") == "2")
        let read = try client.get("exp/k")
        #expect(read.text == "new")
        #expect(read.header("ETag") == put.header("ETag"))
        // And over a live row: 204, the count unchanged.
        #expect(try client.put("live/k", "again").status == 204)
        #expect(try database.psql("SELECT coalesce(sum(keys), 0) FROM \(schema).larder_totals") == "2")
    }

    @Test func aDatabaseFromANewerLarderIsRefused() throws {
        let schema = TestPostgres.makeSchemaName()
        let first = try Self.server(schema: schema)
        first.stop()
        let database = try TestPostgres.shared()
        _ = try database.psql("UPDATE \(schema).larder_schema_version SET version = 99")
        #expect(throws: PostgresStoreError.self) { try Self.server(schema: schema) }
    }

    @Test func expiredValuesAreSweptWithAnExpireEvent() throws {
        let server = try Self.server()
        defer { server.stop() }
        let stream = try SSEClient(port: server.port)
        defer { stream.close() }
        #expect(try stream.readHead() == 200)
        #expect(try server.client().send("PUT", "/store/short?ttl=1", body: Array("soon gone".utf8)).status == 201)
        let events = try stream.events(2, timeout: 30)
        #expect(events.map(\.event) == ["put", "expire"])
        #expect(try server.client().get("short").status == 404)
        let schema = try #require(server.postgresSchema)
        #expect(try TestPostgres.shared().psql("SELECT count(*) FROM \(schema).larder_values") == "0")
    }

    @Test func aBadStoreURLIsAClearError() {
        #expect(throws: PostgresStoreError.self) { try PostgresStoreOptions(url: "postgres://h/db?schema=Bad-Name") }
        #expect(throws: PostgresStoreError.self) { try PostgresStoreOptions(url: "mysql://h/db") }
        let options = try? PostgresStoreOptions(url: "postgres://u:secret@h:5/db?schema=s1&sslmode=disable")
        #expect(options?.schema == "s1")
        #expect(options?.conninfo == "postgres://u:secret@h:5/db?sslmode=disable&keepalives_idle=30&keepalives_interval=10&keepalives_count=3")
        #expect(options?.redactedURL.contains("secret") == false)
    }

    /// The password is masked in each form libpq takes it, the rest kept.
    @Test func theRedactedURLMasksEveryFormOfThePassword() throws {
        #expect(try PostgresStoreOptions(url: "postgres://u:secret@h:5/db").redactedURL == "postgres://u:***@h:5/db")
        #expect(try PostgresStoreOptions(url: "postgres://u@h/db?password=secret&sslmode=disable").redactedURL
                == "postgres://u@h/db?password=***&sslmode=disable")
        #expect(try PostgresStoreOptions(url: "host=h password='se cret' dbname=db").redactedURL == "host=h password=*** dbname=db")
    }

    /// libpq is loaded on the PostgreSQL store's first use, not linked: a
    /// `larder` where it does not load says so and how to fix it, and the
    /// disk store needs none of it.
    @Test(.blockingLane) func aMissingLibpqIsAClearErrorAndTheDiskStoreNeedsNone() throws {
        let missing = ["LARDER_LIBPQ": "/nonexistent/libpq.so.5"]
        let result = try ProcessRunner.run(ChildServer.binaryPath, ["--store", "postgres://u@127.0.0.1:1/db", "--port", "0"],
                                           environment: missing, timeout: 60)
        #expect(result.status != 0)
        #expect(result.stderr.contains("the PostgreSQL store needs libpq"), "\(result.stderr)")
        #expect(result.stderr.contains("apt-get install libpq5") && result.stderr.contains("LARDER_LIBPQ"), "\(result.stderr)")
        // The disk store runs and never maps libpq (the system's is there, unused).
        let disk = try ChildServer(dataDirectory: TestServer.makeTempDirectory(), arguments: ["--no-fsync"])
        #expect(try disk.client().send("GET", "/healthz").status == 200)
        let maps = try String(contentsOfFile: "/proc/\(disk.process.processIdentifier)/maps", encoding: .utf8)
        #expect(!maps.contains("libpq"))
        disk.kill(SIGTERM)
        #expect(disk.waitForExit() == 0)
    }
}
