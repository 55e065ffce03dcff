import Foundation
import LarderSupport
import LarderWire
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server for the PostgreSQL store's tests: a cluster
/// of its own (initdb) in a temp directory, on a free loopback port, trust
/// authentication as `postgres`. Real server processes, nothing mocked.
/// Suites share one per test process (`shared()`), each in a schema of its
/// own (`makeSchemaName()`); a fault test that stops the database takes a
/// private one (`makePrivate()`), so the other suites running in parallel
/// keep theirs.
///
/// initdb and the server refuse to run as root, so as root (the development
/// machine and CI) they run as the `postgres` user that Debian's package
/// creates, owning the temp directory; `psql` runs as whoever we are.
package final class TestPostgres: Sendable {
    /// The server's TCP port on 127.0.0.1; `start()` after `stop()` listens on the same one.
    package let port: Int
    /// The temp directory: the cluster in `data/`, the server log, the unix socket.
    package let directory: String
    private let bin: String
    /// Runs the server and `psql` on a host of their own (`NetworkLab.launcher`); empty on this one.
    private let launcher: [String]
    private var dataDirectory: String { directory + "/data" }

    /// Whether a server can be started here: the binaries are found and, as
    /// root, there is a `postgres` user to run them as. Locally a suite is
    /// `.enabled(if: TestPostgres.isAvailable)`; `bash Tests/provision.sh` installs postgresql.
    package static var isAvailable: Bool { binDirectory != nil && (geteuid() != 0 || getpwnam("postgres") != nil) }

    /// The one server of this test process, started on first use and stopped
    /// (and its directory removed) at exit. A failed start is not retried:
    /// every suite then reports the same error.
    package static func shared() throws -> TestPostgres { try sharedServer.get() }
    private static let sharedServer = Result { try TestPostgres() }

    /// A server of the caller's own, for tests that stop and restart it.
    /// Removed when released (and at exit if it never is).
    package static func makePrivate() throws -> TestPostgres { try TestPostgres() }

    /// A private server on a host of its own (`NetworkLab.launcher(host)`):
    /// it listens on every address there, and `psql` runs there too.
    package static func makePrivate(launcher: [String]) throws -> TestPostgres {
        try TestPostgres(launcher: launcher)
    }

    /// Starts a new private server (`makePrivate()`): a copy of this
    /// process's template cluster, which is what initdb would make.
    package convenience init(launcher: [String] = []) throws {
        try self.init(launcher: launcher) { _, directory in
            let template = try Self.templateCluster.get()
            // -a keeps the owner (the postgres user) and the 0700 the server insists on.
            let copy = try ProcessRunner.run("/bin/cp", ["-a", template, directory + "/data"], timeout: 120)
            guard copy.status == 0 else { throw ClientError("copying the template cluster: \(copy.stderr)") }
        }
    }

    /// What a server or the template cannot start without.
    private static let noServerBinaries =
        ClientError("no PostgreSQL server binaries (initdb, pg_ctl, postgres); `bash Tests/provision.sh` installs postgresql")

    /// One initdb per test process, never started: every server's data
    /// directory is a copy of it. A copy costs a tenth of an initdb's 0.8 s
    /// of CPU, and a run starts a few dozen servers.
    private static let templateCluster = Result { () throws -> String in
        guard let bin = binDirectory else {
            throw noServerBinaries
        }
        _ = exitHook
        let directory = TestServer.makeTempDirectory(prefix: "larder-testpg-\(getpid())-")
        live.withLock { $0[directory] = bin }  // removed at exit with the servers
        try chownToServerUser(directory)
        let initdb = try runAsServerUser(bin + "/initdb", [
            "-D", directory + "/data", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync",
        ], directory: directory)
        guard initdb.status == 0 else { throw ClientError("initdb: \(initdb.stderr)\(initdb.stdoutText)") }
        return directory + "/data"
    }

    /// A server whose data directory `makeData(bin, directory)` fills
    /// (initdb, or a base backup of another server), started on a free port.
    private init(launcher: [String] = [], makeData: (String, String) throws -> Void) throws {
        guard let bin = Self.binDirectory else {
            throw Self.noServerBinaries
        }
        _ = Self.exitHook
        _ = Self.staleSwept
        let directory = TestServer.makeTempDirectory(prefix: "larder-testpg-\(getpid())-")
        Self.live.withLock { $0[directory] = bin }
        do {
            try Self.chownToServerUser(directory)
            try makeData(bin, directory)
            if !launcher.isEmpty {
                // Reached over its cables, not loopback: trust those too (initdb trusts only loopback).
                let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/pg_hba.conf"))
                defer { try? hba.close() }
                try hba.seekToEnd()
                try hba.write(contentsOf: Data("host all all 0.0.0.0/0 trust\n".utf8))
            }
            port = try Self.startOnFreePort(bin: bin, directory: directory, launcher: launcher)
        } catch {
            Self.destroy(directory: directory, bin: bin)
            throw error
        }
        self.bin = bin
        self.directory = directory
        self.launcher = launcher
        _ = try psql("select 1")
    }

    /// A streaming standby of this server (`pg_basebackup -R`, a server of
    /// its own on another port), made synchronous when `synchronous`: a
    /// commit on this server returns only once the standby has it, so an
    /// acknowledged write survives this server's loss.
    package func makeStandby(synchronous: Bool = true) throws -> TestPostgres {
        let primaryPort = port
        let standby = try TestPostgres { bin, directory in
            let backup = try Self.runAsServerUser(bin + "/pg_basebackup", [
                "-D", directory + "/data", "-R", "-X", "stream", "-h", "127.0.0.1", "-p", String(primaryPort), "-U", "postgres",
                "--no-sync",
            ], directory: directory)
            guard backup.status == 0 else { throw ClientError("pg_basebackup: \(backup.stderr)") }
        }
        if synchronous {
            _ = try psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
            _ = try psql("SELECT pg_reload_conf()")
            // Synchronous once the standby says so (it connects within moments).
            for _ in 0..<600 {
                if try psql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == "1" { return standby }
                usleep(50_000)
            }
            throw ClientError("the standby did not become synchronous within 30 s")
        }
        return standby
    }

    /// Makes a standby the primary (`pg_ctl promote`, waiting until it takes writes).
    package func promote() throws {
        let result = try Self.runAsServerUser(bin + "/pg_ctl", ["promote", "-w", "-t", "60", "-D", dataDirectory], directory: directory, launcher: launcher)
        guard result.status == 0 else { throw ClientError("pg_ctl promote: \(result.stderr)") }
    }

    deinit { Self.destroy(directory: directory, bin: bin) }

    /// `postgres://postgres@127.0.0.1:PORT/postgres?schema=NAME`: Larder takes
    /// the `schema` parameter out itself and hands libpq the rest.
    package func url(schema: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/postgres?schema=\(schema)"
    }

    /// A fresh schema name: `t_` and 16 lowercase hex digits, a valid SQL
    /// identifier without quoting, so parallel suites never meet.
    package static func makeSchemaName() -> String { "t_" + randomHex(16) }

    /// Runs `sql` with `psql -At` (unaligned, tuples only: fields split by `|`,
    /// rows by newlines) and returns its trimmed stdout; throws with psql's
    /// stderr when it fails. For test assertions.
    @discardableResult
    package func psql(_ sql: String) throws -> String {
        let command = launcher + [psqlPath]
        let result = try ProcessRunner.run(command[0], Array(command.dropFirst()) + [
            "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "postgres",
            "-c", sql,
        ], environment: ["PGCONNECT_TIMEOUT": "10"], timeout: 60)
        guard result.status == 0 else {
            throw ClientError("psql -c \(sql): \(result.timedOut ? "timed out" : result.stderr)")
        }
        return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The server's `psql`.
    package var psqlPath: String {
        FileManager.default.isExecutableFile(atPath: bin + "/psql") ? bin + "/psql" : "/usr/bin/psql"
    }

    /// A `psql` session of its own, kept open: for a transaction that
    /// stays open while the test does other things.
    package func session() throws -> PSQLSession {
        try PSQLSession(psql: psqlPath, arguments: ["-X", "-At", "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "postgres"])
    }

    /// Stops the server (`pg_ctl stop -m mode`: `smart`, `fast` or `immediate`,
    /// the last a crash as far as the data is concerned), keeping its data.
    package func stop(mode: String = "fast") throws {
        let result = try Self.runAsServerUser(bin + "/pg_ctl", ["stop", "-w", "-t", "60", "-D", dataDirectory, "-m", mode],
                                             directory: directory, launcher: launcher)
        guard result.status == 0 else { throw ClientError("pg_ctl stop -m \(mode): \(result.stderr)") }
    }

    /// Starts it again after `stop`: the same data directory, the same port.
    package func start() throws {
        try Self.startServer(bin: bin, directory: directory, port: port, launcher: launcher)
        _ = try psql("select 1")
    }

    /// Stops every process of the server (SIGSTOP) and closes nothing: to
    /// its clients, a database that stopped answering. `thaw()` ends it.
    package func freeze() throws {
        let postmaster = try postmasterPID()
        // The postmaster first, so that it forks nothing after the children are found.
        Glibc.kill(postmaster, SIGSTOP)
        for child in Self.children(of: postmaster) { Glibc.kill(child, SIGSTOP) }
    }

    /// Lets a frozen server run again.
    package func thaw() throws {
        let postmaster = try postmasterPID()
        for child in Self.children(of: postmaster) { Glibc.kill(child, SIGCONT) }
        Glibc.kill(postmaster, SIGCONT)
    }

    private func postmasterPID() throws -> pid_t {
        let text = try String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)
        guard let pid = pid_t(text.split(separator: "\n").first ?? "") else { throw ClientError("no pid in postmaster.pid") }
        return pid
    }

    /// The processes whose parent is `parent` (`/proc/PID/stat`'s fourth field).
    private static func children(of parent: pid_t) -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent ? pid : nil
        }
    }

    /// Whether the server is up (`pg_ctl status`).
    package var isRunning: Bool {
        (try? Self.runAsServerUser(bin + "/pg_ctl", ["status", "-D", dataDirectory], directory: directory, launcher: launcher))?.status == 0
    }

    // MARK: - Processes

    /// A port found free may be taken before the server binds it: then another.
    private static func startOnFreePort(bin: String, directory: String, launcher: [String]) throws -> Int {
        for attempt in 1... {
            let port = try freePort()
            do {
                try startServer(bin: bin, directory: directory, port: port, launcher: launcher)
                return port
            } catch where attempt < 3 {
                continue
            }
        }
        fatalError("unreachable")
    }

    /// `pg_ctl start -w` returns once the server accepts connections. Only
    /// 127.0.0.1 and a socket in the temp directory (so no lock file in /tmp
    /// or /var/run is shared with another server); fsync stays on, as the
    /// durability tests rely on commits; 300 connections, as many test
    /// servers each hold a small pool. On a host of its own, every address there.
    private static func startServer(bin: String, directory: String, port: Int, launcher: [String]) throws {
        let listen = launcher.isEmpty ? "127.0.0.1" : "'*'"
        let options = "-c listen_addresses=\(listen) -p \(port) -k '\(directory)' -c max_connections=300 -c fsync=on"
        let result = try runAsServerUser(bin + "/pg_ctl", [
            "start", "-w", "-t", "60", "-D", directory + "/data", "-l", directory + "/postgres.log", "-o", options,
        ], directory: directory, launcher: launcher)
        guard result.status == 0 else {
            throw ClientError("pg_ctl start on port \(port): \(result.stderr)\nlog: \(logTail(directory))")
        }
    }

    /// The end of the server's log, for an error that says why it did not start.
    private static func logTail(_ directory: String) -> String {
        let log = (try? String(contentsOfFile: directory + "/postgres.log", encoding: .utf8)) ?? ""
        return String(log.suffix(2000))
    }

    /// As root, `runuser -u postgres --`; otherwise as ourselves. The working
    /// directory is the temp directory, which that user can enter.
    ///
    /// Through a bash that closes every descriptor above stderr first:
    /// Foundation's `Process` on Linux learns that a child exited when a
    /// socket it passes down is closed (swift-corelibs-foundation#4795), and
    /// the server that `pg_ctl start` leaves running would otherwise keep
    /// it open, so `waitUntilExit` would wait as long as the server runs.
    /// `launcher` goes first (`ip netns exec NAME`: a host of its own).
    private static func runAsServerUser(_ executable: String, _ arguments: [String],
                                        directory: String, launcher: [String] = []) throws -> ProcessRunner.Result {
        let closeInherited = [
            "/bin/bash", "-c",
            #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && { exec {fd}>&-; } 2>/dev/null; done; exec "$@""#,
            "bash", executable,
        ] + arguments
        var command = closeInherited
        if geteuid() == 0 {
            guard let runuser = ["/usr/sbin/runuser", "/sbin/runuser"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
                throw ClientError("running as root and no runuser to start PostgreSQL as the postgres user")
            }
            command = [runuser, "-u", "postgres", "--"] + closeInherited
        }
        command = launcher + command
        return try ProcessRunner.run(command[0], Array(command.dropFirst()), directory: directory, timeout: 120)
    }

    /// As root, gives `directory` to the `postgres` user (initdb creates the cluster inside it).
    private static func chownToServerUser(_ directory: String) throws {
        guard geteuid() == 0 else { return }
        guard let user = getpwnam("postgres") else {
            throw ClientError("running as root and no postgres user to run PostgreSQL as (Debian's postgresql package creates it)")
        }
        guard chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw ClientError("chown \(directory) to postgres: errno \(errno)")
        }
    }

    /// A loopback port nobody listens on now: bind port 0, read it, close.
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw ClientError("bind 127.0.0.1:0: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func randomHex(_ digits: Int) -> String {
        String((0..<digits).map { _ in "0123456789abcdef".randomElement()! })
    }

    // MARK: - Finding the binaries, cleaning up

    /// `pg_config --bindir` when it has the server (Debian's libpq-dev ships a
    /// pg_config without one), else the newest /usr/lib/postgresql/*/bin,
    /// else the folder of the `pg_ctl` on PATH.
    private static let binDirectory: String? = {
        func hasServer(_ dir: String) -> Bool {
            ["initdb", "pg_ctl", "postgres"].allSatisfy { FileManager.default.isExecutableFile(atPath: dir + "/" + $0) }
        }
        if let config = try? ProcessRunner.run("/usr/bin/env", ["pg_config", "--bindir"], timeout: 30), config.status == 0 {
            let dir = config.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            if hasServer(dir) { return dir }
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .sorted { $0.compare($1, options: .numeric) == .orderedDescending }
        if let dir = versions.map({ "\(root)/\($0)/bin" }).first(where: hasServer) { return dir }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").lazy
            .map { URL(fileURLWithPath: String($0) + "/pg_ctl") }
            .filter { FileManager.default.isExecutableFile(atPath: $0.path) }
            .map { $0.resolvingSymlinksInPath().deletingLastPathComponent().path }
            .first(where: hasServer)
    }()

    /// Directories of the servers this process started and has not removed, and their bin folder.
    private static let live = Locked<[String: String]>([:])

    /// At exit, every server still here is stopped and its directory removed.
    private static let exitHook: Void = { atexit { TestPostgres.destroyAll() } }()

    private static func destroyAll() {
        let all = live.withLock { live in
            defer { live = [:] }
            return live
        }
        for (directory, bin) in all { destroy(directory: directory, bin: bin) }
    }

    /// `pg_ctl stop -m immediate` when a server runs there, then the directory goes.
    private static func destroy(directory: String, bin: String) {
        if FileManager.default.fileExists(atPath: directory + "/data/postmaster.pid") {
            _ = try? runAsServerUser(bin + "/pg_ctl", ["stop", "-w", "-t", "30", "-D", directory + "/data", "-m", "immediate"],
                                     directory: directory)
        }
        try? FileManager.default.removeItem(atPath: directory)
        live.withLock { _ = $0.removeValue(forKey: directory) }
    }

    /// Once per process: servers left by a test process that is gone (killed
    /// at a deadline, so no exit handler ran) are stopped and removed, so
    /// reruns do not pile up servers (`TestScratch.staleSwept`, and the temp
    /// folder of runs from before it).
    private static let staleSwept: Void = {
        _ = TestScratch.staleSwept
        destroyStale(in: "/tmp/")
    }()

    /// Stops and removes the servers in `directory` (ending in "/") whose
    /// test process is gone.
    static func destroyStale(in directory: String) {
        guard let bin = binDirectory else { return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix("larder-testpg-") {
            guard let pid = Int32(name.split(separator: "-").dropFirst(2).first ?? ""), pid != getpid(),
                  !TestScratch.isRunning(pid) else { continue }
            destroy(directory: directory + name, bin: bin)
        }
    }
}
