import Foundation
import LarderPostgres
import LarderTestSupport
import LarderWire
import Testing

/// `--store` takes what libpq takes: URIs with several hosts and any
/// parameter libpq knows, and `keyword=value` settings; libpq refuses the rest.
@Suite(.blockingLane) struct ConnectionSettingsTests {
    @Test func aMultiHostURIKeepsItsHostsAndParameters() throws {
        let options = try PostgresStoreOptions(
            url: "postgres://larder:secret@db1:5432,db2:5433/app?target_session_attrs=read-write&schema=s2&connect_timeout=3")
        #expect(options.schema == "s2")
        #expect(options.conninfo == "postgres://larder:secret@db1:5432,db2:5433/app?target_session_attrs=read-write&connect_timeout=3"
            + "&keepalives_idle=30&keepalives_interval=10&keepalives_count=3")
        #expect(options.redactedURL == "postgres://larder:***@db1:5432,db2:5433/app?target_session_attrs=read-write&schema=s2&connect_timeout=3")
    }

    @Test func keywordSettingsAreAcceptedWithQuotedValues() throws {
        let options = try PostgresStoreOptions(
            url: "host=db1,db2 port=5432,5433 dbname=app password='se cr\\'et' schema=s3 keepalives_idle=5")
        #expect(options.schema == "s3")
        #expect(options.conninfo == "host=db1,db2 port=5432,5433 dbname=app password='se cr\\'et' keepalives_idle=5"
            + " keepalives_interval=10 keepalives_count=3")
        #expect(!options.redactedURL.contains("se cr"))
        #expect(options.redactedURL.contains("password=***"))
        #expect(try PostgresStoreOptions(url: "postgres://h/db?password=pw").redactedURL == "postgres://h/db?password=***")
    }

    @Test func whatLibpqRefusesIsAClearError() {
        for bad in ["postgres://h/db?no_such_parameter=1", "host=h no_such_keyword=1", "host='unclosed",
                    "/var/lib/larder"] {
            #expect(throws: PostgresStoreError.self, "\(bad)") { try PostgresStoreOptions(url: bad) }
        }
        do {
            _ = try PostgresStoreOptions(url: "postgres://h/db?no_such_parameter=1")
        } catch {
            #expect("\(error)".contains("no_such_parameter"))
        }
    }
}

/// The hosts of a multi-host URI are tried in order: with the first one
/// refusing connections, the store opens on the second.
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct MultiHostStoreTests {
    @Test func aServerWhoseFirstHostIsDownUsesTheNext() throws {
        let database = try TestPostgres.shared()
        let down = try SilentListener(listening: false)
        let schema = TestPostgres.makeSchemaName()
        for (index, url) in ["postgres://postgres@127.0.0.1:\(down.port),127.0.0.1:\(database.port)/postgres?target_session_attrs=read-write&schema=\(schema)",
                    "host=127.0.0.1,127.0.0.1 port=\(down.port),\(database.port) user=postgres dbname=postgres schema=\(schema)"].enumerated() {
            var options = try PostgresStoreOptions(url: url)
            options.poolSize = 2
            let server = try TestServer { $0.openStore = PostgresStore.factory(options: options) }
            defer { server.stop() }
            let client = server.client()
            #expect(try client.put("k\(index)", "v").status == 201)
            #expect(try client.get("k\(index)").text == "v")
        }
        #expect(try database.psql("SELECT count(*) FROM \(schema).larder_values WHERE key LIKE 'k_'") == "2")
        withExtendedLifetime(down) {}
    }
}
