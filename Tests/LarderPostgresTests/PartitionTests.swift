import Foundation
import LarderSupport
import LarderTestSupport
import LarderWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Two `larder` processes and their PostgreSQL on hosts of their own
/// (network namespaces, `NetworkLab`), and one server's cable to the
/// database cut mid-load, then healed. The cut server answers 503
/// `backend_unavailable` within its `--pg-timeout` and its `/healthz` says
/// why; the other keeps serving; after the heal the cut server's event
/// stream catches up with no gap and nothing twice, no acknowledged write
/// is lost, and a history recorded through both servers across the cut is
/// linearizable.
///
/// They change the machine's network (namespaces, cables) and time what
/// Larder does, so they run in a step of their own (`.ci/partitions`), not
/// beside 900 other tests: `swift test` skips them unless
/// `LARDER_PARTITION_TESTS=1`.
@Suite(.blockingLane, .enabled(if: TestPostgres.isAvailable && NetworkLab.isAvailable
                    && ProcessInfo.processInfo.environment["LARDER_PARTITION_TESTS"] == "1",
                "needs LARDER_PARTITION_TESTS=1, PostgreSQL, and root for network namespaces (.ci/partitions)"))
struct PartitionTests {
    /// `--pg-timeout`: short, so the test is; what is checked scales with it.
    static let timeout = 1.0

    @Test func aCutServerAnswers503WhileTheOtherServesAndCatchesUpAfterTheHeal() throws {
        let cluster = try PartitionedCluster()
        let (a, b) = (cluster.a, cluster.b)
        // An event stream on the server that will be cut, open throughout.
        let stream = try SSECollector(host: a.host, port: a.port)

        // Two writers through each server, a key per write.
        let endpoints = [(a.name, a.host, a.port), (b.name, b.host, b.port)]
        let log = Locked<[Attempt]>([])
        let stop = Locked(false)
        let writers = (0..<4).map { writer in
            let (name, host, port) = endpoints[writer / 2]
            return Attempt.writer(server: name, host: host, port: port, keys: "w\(writer)", log: log, until: stop)
        }
        for thread in writers { thread.start() }
        usleep(500_000)

        try cluster.lab.cut(cluster.aToDatabase)
        let cut = ContinuousClock.now
        print("partition: cut: \(cluster.lab.describe(cluster.aToDatabase))")
        // The writers through A may all be waiting out a COMMIT sent just
        // before the cut (it gets 6 × --pg-timeout): a probe begins writes
        // on A during the cut, one after another, until the heal.
        let cutOver = Locked(false)
        let probe = Attempt.writer(server: "a", host: a.host, port: a.port, keys: "probe", log: log, until: cutOver, after: 0.1)
        probe.start()
        // Once the statement allowance has passed, /healthz on the cut server says why.
        usleep(UInt32(Self.timeout * 1_500_000))
        let health = try WireClient(host: a.host, port: a.port).send("GET", "/healthz")
        let healthTook = ContinuousClock.now - cut
        usleep(UInt32(max(0, 3.0 - (healthTook / .seconds(1))) * 1_000_000))

        cutOver.withLock { $0 = true }
        try cluster.lab.heal(cluster.aToDatabase)
        let healed = ContinuousClock.now
        var resumed: Duration?
        let after = WireClient(host: a.host, port: a.port)
        for attempt in 0..<1_500 {
            if (try? after.put("after/\(attempt)", "x"))?.status == 201 {
                resumed = ContinuousClock.now - healed
                break
            }
            usleep(20_000)
        }
        usleep(500_000)
        stop.withLock { $0 = true }
        while (writers + [probe]).contains(where: { !$0.isFinished }) { usleep(10_000) }
        let attempts = log.withLock { $0 }

        // The cut server said why it was unhealthy.
        print("partition: /healthz on the cut server: \(health.status) \(health.text)")
        #expect(health.status == 503 && health.json?["error"] as? String == "unhealthy", "\(health.status) \(health.text)")
        #expect((health.json?["message"] as? String)?.isEmpty == false)
        let took = try #require(resumed, "writes on the cut server did not resume within 30 s of the heal")

        // On the cut server, a write begun during the cut answered 503
        // backend_unavailable, within the allowance to wait for a connection
        // and for the database to answer (a second of slack for a loaded
        // machine), or was acknowledged: its commit made it after the heal.
        let duringCut = attempts.filter { $0.server == "a" && $0.began > cut + .milliseconds(100) && $0.ended < healed }
        let slowest = duringCut.map { $0.ended - $0.began }.max() ?? .zero
        #expect(!duringCut.isEmpty)
        #expect(duringCut.allSatisfy { $0.outcome == .unavailable }, "\(duringCut.filter { $0.outcome != .unavailable }.prefix(3))")
        #expect(slowest < .seconds(2 * Self.timeout + 1), "a request on the cut server took \(slowest)")
        // The other server went on acknowledging writes through the cut.
        let otherDuringCut = attempts.filter { $0.server == "b" && $0.began > cut && $0.ended < healed && $0.outcome == .acknowledged }
        #expect(otherDuringCut.count > 0, "the server that was not cut acknowledged nothing during the cut")
        let unexpected = attempts.compactMap { attempt -> String? in
            if case .other(let why) = attempt.outcome { return "\(attempt.server) \(attempt.key): \(why)" }
            return nil
        }
        #expect(unexpected.isEmpty, "answers neither 201 nor 503 backend_unavailable: \(unexpected.prefix(5))")

        // Nothing acknowledged is lost, read through either server.
        let acknowledged = attempts.filter { $0.outcome == .acknowledged }.map(\.key)
        var lost: [String] = []
        for (index, key) in acknowledged.enumerated() {
            let server = index % 2 == 0 ? a : b
            let read = try WireClient(host: server.host, port: server.port).get(key)
            if read.status != 200 { lost.append("\(key) (\(read.status) through \(server.name): \(read.text))") }
        }
        #expect(lost.isEmpty, "acknowledged writes lost: \(lost.prefix(10))")

        // The cut server's stream caught up: every acknowledged write, once,
        // in increasing versions.
        let wanted = Set(acknowledged)
        try Poll.until(30, "the cut server's event stream to carry every acknowledged write") {
            Set(stream.keys).isSuperset(of: wanted)
        }
        let events = stream.stop()
        #expect(!events.contains { $0.event == "reset" }, "the history reached back: no reset was due")
        let puts = events.filter { $0.event == "put" }
        let ids = puts.compactMap(\.id).map { UInt64($0, radix: 16) ?? 0 }
        #expect(ids == ids.sorted(), "the stream's versions went back")
        let keys = puts.compactMap { $0.json?["key"] as? String }
        #expect(Set(keys).count == keys.count, "the stream carried a write twice")
        print("partition: cut 3 s; the cut server answered \(duringCut.count) writes during it with 503, the slowest in \(slowest); "
              + "the other acknowledged \(otherDuringCut.count); writes resumed \(took) after the heal; "
              + "\(acknowledged.count) acknowledged, all there; the cut server's stream carried \(puts.count) changes")
    }

    /// 8 clients, 4 through each server, record GET, PUT, compare-and-swap,
    /// append and delete on 3 keys while one server's cable to the database
    /// is cut for 2 s and healed for 2 s, from 1.5 s in until the run
    /// ends; the history is checked for linearizability
    /// (Tests/cluster/linearizability.py). 6 s (one cut) unless
    /// `LARDER_FAULT_SECONDS` says (Tests/cluster/long-faults.sh).
    @Test func aHistoryThroughTwoServersAcrossACutIsLinearizable() async throws {
        let seconds = FaultRun.seconds(default: 6)
        let cluster = try PartitionedCluster()
        let history = FileManager.default.temporaryDirectory.appendingPathComponent("partition-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: history) }
        let urls = [cluster.a, cluster.b].map { "http://\($0.host):\($0.port)" }
        let started = history + ".started"
        defer { try? FileManager.default.removeItem(atPath: started) }
        let cuts = Locked(0)
        let (lab, link) = (cluster.lab, cluster.aToDatabase)
        // Cut 2 s, healed 2 s, from 1.5 s into the recording until 2.5 s before its end.
        let schedule = FaultSchedule(startedFile: started, delay: 1.5) {
            let began = ContinuousClock.now - .seconds(1.5)
            repeat {
                try lab.cut(link)
                cuts.withLock { $0 += 1 }
                usleep(2_000_000)
                try lab.heal(link)
                usleep(2_000_000)
            } while ContinuousClock.now - began + .seconds(2.5) < .seconds(seconds)
        }
        let result = try await PythonRunner.run([
            Repository.path("Tests/cluster/record_history.py"), "--url", urls[0], "--url", urls[1], "--clients", "8", "--keys", "3",
            "--seconds", "\(seconds)", "--request-timeout", "\(Self.timeout * 8)", "--out", history, "--started-file", started,
            "--check", "--check-timeout", "\(FaultRun.checkTimeout(seconds))",
        ], timeout: FaultRun.checkTimeout(seconds) + seconds + 120)
        let failed = await schedule.finished()
        let cutCount = cuts.withLock { $0 }
        #expect(failed == nil, "cutting the cable failed: \(failed ?? "")")
        print("partition history (\(seconds) s, \(cutCount) cuts): \(result.stderr.split(separator: "\n").suffix(3).joined(separator: " | ")) \(result.stdout)")
        #expect(cutCount >= 1)
        #expect(!result.timedOut)
        #expect(result.status == 0, "not linearizable, or not checked: \(result.stdout) \(result.stderr)")
        // Most calls were answered: the cuts are half the time, on one server of two.
        let records = try String(contentsOfFile: history, encoding: .utf8).split(separator: "\n")
        let answered = records.filter { !$0.contains("\"return\":null") }.count
        #expect(answered * 2 > records.count, "only \(answered) of \(records.count) calls were answered")
    }
}

/// One write and how it went.
private struct Attempt: CustomStringConvertible, Sendable {
    enum Outcome: Equatable, Sendable {
        case acknowledged, unavailable
        case other(String)

        /// A write's answer (nil: none came).
        init(_ answer: ClientResponse?) {
            self = switch answer {
            case let r? where r.status == 201: .acknowledged
            case let r? where r.status == 503 && r.json?["error"] as? String == "backend_unavailable": .unavailable
            case let r?: .other("\(r.status) \(r.text)")
            case nil: .other("no answer")
            }
        }
    }
    let server: String
    let key: String
    let began: ContinuousClock.Instant
    let ended: ContinuousClock.Instant
    let outcome: Outcome
    var description: String { "\(server) \(key) \(outcome) in \(ended - began)" }

    /// A thread (not started) that writes `keys/0`, `keys/1`, … one after
    /// another through the server, logging each attempt, from `after`
    /// seconds on until `stop` is set.
    static func writer(server: String, host: String, port: Int, keys: String, log: Locked<[Attempt]>,
                       until stop: Locked<Bool>, after delay: Double = 0) -> Thread {
        Thread {
            if delay > 0 { usleep(UInt32(delay * 1_000_000)) }
            let wire = WireClient(host: host, port: port)
            var n = 0
            while !stop.withLock({ $0 }) {
                let key = "\(keys)/\(n)"
                n += 1
                let began = ContinuousClock.now
                let outcome = Outcome(try? wire.put(key, "v"))
                log.withLock { $0.append(Attempt(server: server, key: key, began: began, ended: .now, outcome: outcome)) }
            }
        }
    }
}

/// Three hosts: `db` (a private PostgreSQL), `a` and `b` (a `larder` each,
/// `--pg-timeout` short), each server cabled to the database and to the
/// test's own namespace, where the clients are.
private final class PartitionedCluster {
    struct Server {
        let name: String
        let host: String
        let port: Int
        let process: ChildServer
    }
    let lab: NetworkLab
    let database: TestPostgres
    let aToDatabase: NetworkLab.Link
    let a: Server
    let b: Server

    init() throws {
        lab = try NetworkLab(hosts: ["db", "a", "b"])
        aToDatabase = try lab.connect("db", "a")
        let bToDatabase = try lab.connect("db", "b")
        let clientsToA = try lab.connect(nil, "a")
        let clientsToB = try lab.connect(nil, "b")
        database = try TestPostgres.makePrivate(launcher: lab.launcher("db"))
        let schema = TestPostgres.makeSchemaName()
        a = try Self.start("a", in: lab, database: "\(aToDatabase.addresses.0):\(database.port)", schema: schema,
                           reachedAt: clientsToA.addresses.1)
        b = try Self.start("b", in: lab, database: "\(bToDatabase.addresses.0):\(database.port)", schema: schema,
                           reachedAt: clientsToB.addresses.1)
    }

    private static func start(_ name: String, in lab: NetworkLab, database: String, schema: String,
                              reachedAt host: String) throws -> Server {
        let url = "postgres://postgres@\(database)/postgres?schema=\(schema)"
        let process = try ChildServer(dataDirectory: nil, arguments: [
            "--host", "0.0.0.0", "--store", url, "--pg-pool", "4", "--pg-timeout", String(PartitionTests.timeout),
            "--log-level", "warning",
        ], launcher: lab.launcher(name))
        let server = Server(name: name, host: host, port: process.port, process: process)
        // It serves before the test begins: a run of nothing but 503s would prove nothing.
        let answer = try WireClient(host: host, port: server.port).put("warm-up/\(name)", "x")
        guard answer.status / 100 == 2 else { throw ClientError("\(name) does not serve: \(answer.status) \(answer.text)") }
        return server
    }

    deinit {
        a.process.kill(SIGTERM)
        b.process.kill(SIGTERM)
    }
}
