import Foundation
import Testing
import LarderTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The docs' shell examples (README.md and docs/), run with bash and curl
/// against a real server (their `localhost:8080` replaced by the server's
/// address), each in a fresh working directory, so the documentation cannot
/// drift from what the server does. An example with an `output:` block must
/// print exactly that, ids and times aside.
@Suite(.blockingLane) struct DocExampleTests {
    /// The examples whose `output:` block is compared, by file and name.
    static let printed: [(file: String, name: String)] = [
        ("README.md", "readme-tour"),
        ("docs/getting-started.md", "first-value"),
        ("docs/values.md", "values"),
        ("docs/listing.md", "listing"),
        ("docs/expiry.md", "expiry"),
        ("docs/sharing.md", "tour"),
        ("docs/snapshots.md", "snapshots"),
        ("docs/http-api.md", "namespaces"),
        ("docs/journal.md", "journal"),
    ]

    /// Starts `bash -c script` in a new temporary directory with the
    /// server's address in place of localhost:8080.
    static func start(_ script: String, port: Int) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(port)")]
        process.currentDirectoryURL = URL(fileURLWithPath: TestServer.makeTempDirectory())
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }

    static func run(_ script: String, port: Int) throws -> String {
        let (process, out) = try start(script, port: port)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        // Closed now, not whenever Foundation lets go of the Process (see ProcessRunner).
        try? out.fileHandleForReading.close()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: process.currentDirectoryURL!)
        guard process.terminationStatus == 0 else { throw ExampleError("the example exited with \(process.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }

    @Test(arguments: printed.map { "\($0.file) \($0.name)" })
    func theExamplePrintsWhatItsPageSays(_ example: String) throws {
        let parts = example.split(separator: " ").map(String.init)
        let server = try TestServer()
        defer { server.stop() }
        let output = try Self.run(try DocExample.block(parts[0], "example: \(parts[1])"), port: server.port)
        #expect(DocExample.normalized(output) == DocExample.normalized(try DocExample.block(parts[0], "output: \(parts[1])")),
                "\(example) printed:\n\(output)")
    }

    /// The faults guide's examples, on a server started with --allow-faults.
    static let faultExamples = ["faults", "network-faults"]

    @Test(arguments: faultExamples)
    func theFaultsExamplesPrintWhatTheirPageSays(_ name: String) throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        let output = try Self.run(try DocExample.block("docs/faults.md", "example: \(name)"), port: server.port)
        #expect(DocExample.normalized(output) == DocExample.normalized(try DocExample.block("docs/faults.md", "output: \(name)")),
                "printed:\n\(output)")
    }

    /// Every `<!-- example: -->` in README.md and docs/ is run by a test
    /// here or in DocSuiteExampleTests, and every `output:` belongs to one:
    /// a new example cannot be added untested.
    @Test func everyMarkedExampleIsRun() throws {
        let run = Set(Self.printed.map { "\($0.file) \($0.name)" } + Self.faultExamples.map { "docs/faults.md \($0)" }
            + Self.runWithoutOutput + Self.runElsewhere + DocSuiteExampleTests.examples.map { "\($0.0) \($0.1)" })
        var marked: Set<String> = [], outputs: Set<String> = []
        for file in DocExample.markdownFiles {
            let text = try String(contentsOfFile: Repository.path(file), encoding: .utf8)
            for name in DocExample.markers("example", in: text) {
                marked.insert("\(file) \(name)")
                #expect(DocExample.fencedBlock(in: text, after: "example: \(name)") != nil, "\(file): no block right after example \(name)")
            }
            for name in DocExample.markers("output", in: text) { outputs.insert("\(file) \(name)") }
        }
        #expect(marked == run, "marked but not run: \(marked.subtracting(run).sorted()); run but not marked: \(run.subtracting(marked).sorted())")
        #expect(outputs.isSubset(of: marked), "outputs without an example: \(outputs.subtracting(marked).sorted())")
    }

    /// The examples checked by what they do rather than by a printed block.
    static let runWithoutOutput = ["docs/sharing.md cas", "docs/sharing.md watch", "docs/sharing.md events"]

    /// The examples that need a server or tools this suite does not start,
    /// run by the suite named: docs/s3.md's aws CLI and presigned POST
    /// examples need the S3 listener, awscli and boto3 (LarderS3Tests'
    /// S3ClientsTests).
    static let runElsewhere = ["docs/s3.md aws-cli", "docs/s3.md presigned-post"]

    @Test func fourCompareAndSwapLoopsCountToForty() throws {
        let server = try TestServer()
        defer { server.stop() }
        let script = try DocExample.block("docs/sharing.md", "example: cas")
        let loops = try (0..<4).map { _ in try Self.start(script, port: server.port) }
        for (process, _) in loops {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        #expect(try server.client().get("counter").text == "40")
    }

    /// The loop retries a 412 only: with no server (curl's code 000) it
    /// exits 1 at once instead of spinning on curl forever.
    @Test func theCompareAndSwapLoopStopsWhenTheServerIsGone() throws {
        let refusing = try SilentListener(listening: false)  // held: no other test takes the port
        let (process, out) = try Self.start(try DocExample.block("docs/sharing.md", "example: cas"), port: refusing.port)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(Poll.holds(within: 10) { !process.isRunning }, "the loop still runs with no server")
        try? out.fileHandleForReading.close()
        if !process.isRunning { #expect(process.terminationStatus == 1) }
    }

    /// A write that fails after a read succeeded (a 503 on every PUT) ends
    /// the loop with 1, and the value it read into its temp file is removed.
    @Test func theCompareAndSwapLoopLeavesNoTempFileWhenAWriteFails() throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        let client = server.client()
        #expect(try client.put("counter", "0").status == 201)
        let rules = #"[{"id":"no-writes","prefix":"counter","methods":["PUT"],"status":503}]"#
        #expect(try client.send("PUT", "/faults", body: Array(rules.utf8)).status == 200)
        let (process, out) = try Self.start(try DocExample.block("docs/sharing.md", "example: cas"), port: server.port)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        #expect(Poll.holds(within: 10) { !process.isRunning }, "the loop still runs after a 503")
        try? out.fileHandleForReading.close()
        guard !process.isRunning else { return }
        #expect(process.terminationStatus == 1)
        #expect(try client.get("counter").text == "0")
        // bash -c's $$ is the process's own id.
        #expect(!FileManager.default.fileExists(atPath: "/tmp/counter.\(process.processIdentifier)"), "the loop left its temp file")
    }

    @Test func theWatchLoopSeesEachChangeAndTheDelete() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        let (process, out) = try Self.start(try DocExample.block("docs/sharing.md", "example: watch"), port: server.port)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        for value in ["v1", "v2"] {
            #expect(Poll.holds(within: Poll.patience) { server.server.watcherCount == 1 }, "the loop is waiting")
            #expect(try client.put("config", value).status < 300)
            #expect(Poll.holds(within: Poll.patience) { server.server.watcherCount == 0 })
        }
        #expect(Poll.holds(within: Poll.patience) { server.server.watcherCount == 1 })
        #expect(try client.delete("config").status == 204)
        #expect(Poll.holds(within: Poll.patience) { !process.isRunning }, "the loop ends when the key is deleted")
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(output == "config is now v1\nconfig is now v2\nconfig is gone (404)\n")
    }

    @Test func curlFollowsTheChangeFeed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = server.client()
        // One command: exec'd, so stopping the process stops curl itself.
        let (process, out) = try Self.start("exec " + (try DocExample.block("docs/sharing.md", "example: events")), port: server.port)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let printed = SharedText()
        printed.collect(out.fileHandleForReading)
        #expect(Poll.holds(within: Poll.patience) { server.server.eventStreamCount == 1 })
        let created = try client.send("POST", "/store/jobs/", body: Array("resize img-7".utf8))
        #expect(created.status == 201)
        try client.put("other/x", "not under jobs/")
        #expect(try client.deletePrefix("jobs/").status == 200)
        // The feed stays open: stop curl once the bulk delete has come
        // through it (the events before it came first, in order).
        #expect(Poll.holds(within: Poll.patience) { printed.withLock { $0.contains("event: delete\n") } })
        // SIGKILL: a child of the test process may inherit a mask that blocks SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let text = printed.withLock { $0 }
        let key = created.json?["key"] as? String ?? "?"
        #expect(text.hasPrefix(": larder change feed\n\n"))
        #expect(text.contains("event: put\ndata: {\"key\":\"\(key)\""))
        #expect(text.contains("event: delete\ndata: {\"prefix\":\"jobs/\",\"deleted\":1}"))
        #expect(!text.contains("other/x"))
    }
}
