import Foundation
import LarderPostgres
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A Larder on a multi-host URL follows its database from a primary that
/// died to the synchronous standby promoted in its place, without a
/// restart, and nothing it acknowledged is lost; its event stream goes on
/// across the failover with no change missing or repeated.
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable, "PostgreSQL is not installed (bash Tests/provision.sh installs it)"))
struct FailoverTests {
    @Test func writesResumeOnThePromotedStandbyWithNothingLost() throws {
        let primary = try TestPostgres.makePrivate()
        let standby = try primary.makeStandby(synchronous: true)
        let schema = TestPostgres.makeSchemaName()
        var options = try PostgresStoreOptions(url: "postgres://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres"
            + "?target_session_attrs=read-write&connect_timeout=2&schema=\(schema)")
        options.poolSize = 2
        options.commandTimeout = 2
        let server = try TestServer { $0.openStore = PostgresStore.factory(options: options) }
        defer { server.stop() }
        let client = server.client()
        // An event stream open through it all, read as it goes.
        let stream = try SSECollector(port: server.port)
        // Four writers keep writing through the failover; each remembers
        // what the server acknowledged (201) and counts what it refused.
        let stop = Locked(false)
        let acknowledged = Locked<[String]>([])
        let refused = Locked(0)
        let otherErrors = Locked<[String]>([])
        let port = server.port
        let writers = (0..<4).map { writer in
            Thread {
                let wire = WireClient(port: port)
                var n = 0
                while !stop.withLock({ $0 }) {
                    let key = "w\(writer)/\(n)"
                    n += 1
                    guard let response = try? wire.put(key, "v") else { continue }
                    if response.status == 201 {
                        acknowledged.withLock { $0.append(key) }
                    } else if response.status == 503, response.json?["error"] as? String == "backend_unavailable" {
                        refused.withLock { $0 += 1 }
                    } else {
                        otherErrors.withLock { $0.append("\(response.status) \(response.text)") }
                    }
                }
            }
        }
        for thread in writers { thread.start() }
        usleep(300_000)
        let beforeFailover = acknowledged.withLock { $0.count }

        try primary.stop(mode: "immediate")
        try standby.promote()
        let promoted = ContinuousClock.now
        // Writes come back on the same server: its pool drops the dead
        // connections and libpq finds the read-write host.
        var resumed: Duration?
        for attempt in 0..<600 {
            if try client.put("after/\(attempt)", "x").status == 201 {
                resumed = ContinuousClock.now - promoted
                break
            }
            usleep(20_000)
        }
        usleep(300_000)
        stop.withLock { $0 = true }
        while writers.contains(where: { !$0.isFinished }) { usleep(10_000) }
        let took = try #require(resumed, "writes did not resume within 12 s of the promotion")
        let all = acknowledged.withLock { $0 }
        print("failover: writes resumed \(took) after the promotion; \(all.count) writes acknowledged "
              + "(\(beforeFailover) before it), \(refused.withLock { $0 }) refused with 503")
        #expect(all.count > beforeFailover, "writes went on after the failover")
        #expect(otherErrors.withLock { $0 }.isEmpty, "a write in the failover answered neither 201 nor 503 backend_unavailable")
        var lost: [String] = []
        for key in all where try client.get(key).status != 200 { lost.append(key) }
        #expect(lost.isEmpty, "acknowledged writes lost in the failover: \(lost.prefix(10))")

        // Every acknowledged write is in the stream, once, in increasing
        // versions (a write answered 503 may be there too: its outcome was unknown).
        let wanted = Set(all)
        try Poll.until(30, "the event stream to carry every acknowledged write") {
            Set(stream.keys).isSuperset(of: wanted)
        }
        let events = stream.stop().filter { $0.event == "put" }
        let ids = events.compactMap(\.id)
        #expect(ids == ids.sorted(), "the stream's versions went back")
        #expect(Set(ids).count == ids.count, "the stream repeated a change")
        let keys = events.compactMap { $0.json?["key"] as? String }
        #expect(Set(keys).count == keys.count, "the stream carried a write twice")
        print("failover: the event stream carried \(events.count) changes, every acknowledged one once")
    }
}

extension FailoverTests {
    /// 8 clients, 4 through each of two `larder` processes, record GET,
    /// PUT, compare-and-swap, append and delete on 3 keys while the primary
    /// dies and the standby is promoted; the history is checked for
    /// linearizability (Tests/cluster/linearizability.py). A call answered
    /// 503 is recorded with its outcome unknown, as it is. 5 s unless
    /// `LARDER_FAULT_SECONDS` says (Tests/cluster/long-faults.sh).
    @Test func aHistoryThroughTwoServersAcrossAFailoverIsLinearizable() async throws {
        let seconds = FaultRun.seconds(default: 5)
        let primary = try TestPostgres.makePrivate()
        let standby = try primary.makeStandby(synchronous: true)
        let url = "postgres://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres"
            + "?target_session_attrs=read-write&connect_timeout=2&schema=\(TestPostgres.makeSchemaName())"
        let arguments = ["--store", url, "--pg-pool", "4", "--log-level", "warning"]
        let a = try ChildServer(dataDirectory: nil, arguments: arguments)
        let b = try ChildServer(dataDirectory: nil, arguments: arguments)
        defer { a.kill(SIGTERM); b.kill(SIGTERM) }
        let history = FileManager.default.temporaryDirectory.appendingPathComponent("failover-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: history) }
        // Both serve before the run: a history of nothing but 503s would check out, and prove nothing.
        for server in [a, b] {
            let answer = try WireClient(port: server.port).put("warm-up", "x")
            #expect(answer.status / 100 == 2, "\(answer.status) \(answer.text)")
        }
        let urls = ["http://127.0.0.1:\(a.port)", "http://127.0.0.1:\(b.port)"]
        let started = history + ".started"
        defer { try? FileManager.default.removeItem(atPath: started) }
        let failover = FaultSchedule(startedFile: started, delay: 1.5) {
            try primary.stop(mode: "immediate")
            try standby.promote()
        }
        let result = try await PythonRunner.run([
            Repository.path("Tests/cluster/record_history.py"), "--url", urls[0], "--url", urls[1], "--clients", "8", "--keys", "3",
            "--seconds", "\(seconds)", "--request-timeout", "3", "--out", history, "--started-file", started,
            "--check", "--check-timeout", "\(FaultRun.checkTimeout(seconds))",
        ], timeout: FaultRun.checkTimeout(seconds) + seconds + 120)
        let failed = await failover.finished()
        #expect(failed == nil, "the failover failed: \(failed ?? "")")
        print("failover history (\(seconds) s): \(result.stderr.split(separator: "\n").suffix(3).joined(separator: " | ")) \(result.stdout)")
        #expect(!result.timedOut)
        #expect(result.status == 0, "not linearizable, or not checked: \(result.stdout) \(result.stderr)")
        // Most calls were answered: the failover window is a second or two of five.
        let records = try String(contentsOfFile: history, encoding: .utf8).split(separator: "\n")
        let answered = records.filter { !$0.contains("\"return\":null") }.count
        #expect(answered * 2 > records.count, "only \(answered) of \(records.count) calls were answered")
    }
}
