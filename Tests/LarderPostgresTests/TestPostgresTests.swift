import Foundation
import LarderTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The throwaway PostgreSQL the PostgreSQL store's tests run against: it
/// starts, keeps committed rows across a restart on its port, hands out
/// distinct schemas and a URL that Larder and libpq both read. Real
/// servers, real psql.
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable, "needs PostgreSQL's server binaries (`bash Tests/provision.sh` installs postgresql)"))
struct TestPostgresTests {
    @Test func theSharedServerAnswersWithTheSettingsTheTestsNeed() throws {
        let pg = try TestPostgres.shared()
        #expect(try TestPostgres.shared() === pg)
        #expect(try pg.psql("select 1") == "1")
        #expect(pg.isRunning)
        #expect(try pg.psql("show listen_addresses") == "127.0.0.1")
        #expect(try pg.psql("show max_connections") == "300")
        #expect(try pg.psql("show fsync") == "on")
        #expect(try pg.psql("show server_encoding") == "UTF8")
    }

    @Test func aPrivateServerKeepsCommittedRowsAcrossAStopAndStartOnItsPort() throws {
        let shared = try TestPostgres.shared()
        let pg = try TestPostgres.makePrivate()
        #expect(pg.port != shared.port)
        let port = pg.port
        try pg.psql("create table kept (n int primary key); insert into kept select generate_series(1, 100)")

        try pg.stop()
        #expect(!pg.isRunning)
        #expect(throws: (any Error).self) { try pg.psql("select 1") }
        // The shared server is not the one stopped.
        #expect(try shared.psql("select 1") == "1")
        try pg.start()
        #expect(pg.isRunning)
        #expect(pg.port == port)
        #expect(try pg.psql("select count(*), sum(n) from kept") == "100|5050")

        // An immediate stop is a crash to the data: what was committed comes back from the WAL.
        try pg.psql("insert into kept values (101)")
        try pg.stop(mode: "immediate")
        #expect(!pg.isRunning)
        try pg.start()
        #expect(try pg.psql("select count(*) from kept") == "101")
    }

    @Test func aReleasedPrivateServerIsGone() throws {
        var directory = ""
        var port = 0
        do {
            let pg = try TestPostgres.makePrivate()
            directory = pg.directory
            port = pg.port
            #expect(FileManager.default.fileExists(atPath: directory + "/data/PG_VERSION"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(!Self.acceptsConnections(port: port))
    }

    @Test func schemaNamesDifferAndNeedNoQuoting() throws {
        let names = (0..<100).map { _ in TestPostgres.makeSchemaName() }
        #expect(Set(names).count == names.count)
        for name in names {
            #expect(name.hasPrefix("t_"))
            #expect(name.count <= 63)
            #expect(name.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }, "\(name)")
        }
        let pg = try TestPostgres.shared()
        let schema = names[0]
        try pg.psql("create schema \(schema); create table \(schema).t (n int)")
        #expect(try pg.psql("select count(*) from information_schema.tables where table_schema = '\(schema)'") == "1")
        try pg.psql("drop schema \(schema) cascade")
    }

    @Test func theURLNamesTheServerAndTheSchema() throws {
        let pg = try TestPostgres.shared()
        let schema = TestPostgres.makeSchemaName()
        var url = try #require(URLComponents(string: pg.url(schema: schema)))
        #expect(url.scheme == "postgres")
        #expect(url.user == "postgres")
        #expect(url.host == "127.0.0.1")
        #expect(url.port == pg.port)
        #expect(url.path == "/postgres")
        #expect(url.queryItems == [URLQueryItem(name: "schema", value: schema)])

        // What is left once Larder takes `schema` out is a URL libpq connects with.
        url.queryItems = nil
        let psql = try ProcessRunner.run("/usr/bin/env", ["psql", "-X", "-At", "-d", try #require(url.string),
                                                          "-c", "select current_user, current_database()"])
        #expect(psql.status == 0, "\(psql.stderr)")
        #expect(psql.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "postgres|postgres")
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    static func acceptsConnections(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
