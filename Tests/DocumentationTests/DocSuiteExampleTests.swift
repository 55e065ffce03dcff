import Foundation
import Testing
import LarderTestSupport

/// The docs' examples that start a server of their own (docs/test-suites.md,
/// docs/security.md), each run as written (shell with curl, pytest with
/// requests, node:test with fetch) in a fresh directory holding the fixture
/// they assume, with the built `larder` first on the PATH. Each starts and
/// stops its own server, as a user's suite would.
@Suite(.blockingLane) struct DocSuiteExampleTests {
    static let page = "docs/test-suites.md"

    /// The examples, by page and name, each run by a test below.
    static let examples = [(page, "runner"), (page, "suite-shell"), (page, "suite-namespaces"), (page, "suite-python"), (page, "suite-node"),
                           ("docs/security.md", "token"), ("docs/journal.md", "journal-pytest"),
                           ("docs/time.md", "clock-pytest")]

    /// A working directory with `fixtures/users/1.json` and the example saved as `file`.
    static func workspace(example: String, file: String, page: String = page) throws -> String {
        let dir = TestServer.makeTempDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/fixtures/users", withIntermediateDirectories: true)
        try Data("{\"name\": \"Ada\"}".utf8).write(to: URL(fileURLWithPath: dir + "/fixtures/users/1.json"))
        try Data(try DocExample.block(page, "example: \(example)").utf8).write(to: URL(fileURLWithPath: dir + "/" + file))
        return dir
    }

    /// Runs `command` in `directory` with `larder` on the PATH; its status
    /// and what it printed (stdout, then stderr).
    static func run(_ command: [String], in directory: String, environment: [String: String] = [:],
                    timeout: Double = 60) throws -> (status: Int32, output: String) {
        let binDirectory = (ChildServer.binaryPath as NSString).deletingLastPathComponent
        let path = binDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try ProcessRunner.run("/usr/bin/env", command,
                                           environment: environment.merging(["PATH": path, "PYTHONDONTWRITEBYTECODE": "1"]) { $1 },
                                           directory: directory, timeout: timeout)
        return (result.status, result.stdoutText + result.stderr)
    }

    static func have(_ tool: String) -> Bool {
        (try? run(["sh", "-c", "command -v \(tool)"], in: "/"))?.status == 0
    }

    /// Runs the bash example `name` of `page`, which starts its own
    /// `larder --ephemeral … 2>larder.log`: it exits 0, prints exactly the
    /// page's output block, and the ephemeral data directory (the log names
    /// it) went with the server.
    static func expectShellExampleToPrintItsOutput(_ name: String, page: String = page) throws {
        let dir = try workspace(example: name, file: "\(name).sh", page: page)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try run(["bash", "\(name).sh"], in: dir)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output == (try DocExample.block(page, "output: \(name)")))
        let log = try String(contentsOfFile: dir + "/larder.log", encoding: .utf8)
        let data = try #require(log.firstMatch(of: /with data in (\S+)/)?.1)
        #expect(data.contains("larder-ephemeral-"))
        #expect(!FileManager.default.fileExists(atPath: String(data)))
    }

    /// A fixture read, a write, a snapshot saved, a reset, the snapshot put back.
    @Test func theShellExampleSavesAndRestoresAState() throws {
        try Self.expectShellExampleToPrintItsOutput("suite-shell")
    }

    /// Two workers' namespaces side by side: each written and reset alone,
    /// both over the fixtures, then listed.
    @Test func theNamespacesExampleKeepsWorkersApart() throws {
        try Self.expectShellExampleToPrintItsOutput("suite-namespaces")
    }

    /// The runner's own lines: the URL read from stdout, a request, SIGTERM,
    /// exit 0.
    @Test func theRunnerExampleStartsAndStopsAServer() throws {
        try Self.expectShellExampleToPrintItsOutput("runner")
    }

    /// docs/security.md: without the token 401, with it 200, /healthz open,
    /// and a preflight from the allowed origin answered for it.
    @Test func theTokenExampleLocksAllButHealth() throws {
        try Self.expectShellExampleToPrintItsOutput("token", page: "docs/security.md")
    }

    @Test func thePytestExamplePasses() throws {
        let check = try Self.run(["python3", "-c", "import pytest, requests"], in: "/")
        try #require(check.status == 0, "the Python example needs pytest and requests: python3 -m pip install pytest requests")
        let dir = try Self.workspace(example: "suite-python", file: "test_with_larder.py")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try Self.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_with_larder.py"], in: dir)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("4 passed"), "\(result.output)")
    }

    /// A pytest example that uses the pytest plugin: the plugin from this
    /// checkout (clients/python/src) as `pip install` would give it,
    /// `larder_fixtures` as the pages say, the server it starts from the
    /// PATH. It passes `passed` tests.
    static func expectPluginExampleToPass(_ example: String, file: String, page: String, passed: Int) throws {
        let check = try run(["python3", "-c", "import pytest, requests"], in: "/")
        try #require(check.status == 0, "the Python example needs pytest and requests: python3 -m pip install pytest requests")
        let dir = try workspace(example: example, file: file, page: page)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("[pytest]\nlarder_fixtures = fixtures\n".utf8).write(to: URL(fileURLWithPath: dir + "/pytest.ini"))
        // `no:larder` first: an installed pytest-larder would register the same module twice.
        let result = try run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:larder",
                              "-p", "pytest_larder.plugin", file],
                             in: dir, environment: ["PYTHONPATH": Repository.path("clients/python/src")])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("\(passed) passed"), "\(result.output)")
    }

    /// docs/journal.md: the pytest plugin's `requests()`.
    @Test func theJournalPytestExamplePasses() throws {
        try Self.expectPluginExampleToPass("journal-pytest", file: "test_profiles.py", page: "docs/journal.md", passed: 3)
    }

    /// docs/time.md: the pytest plugin's `clock`.
    @Test func theClockPytestExamplePasses() throws {
        try Self.expectPluginExampleToPass("clock-pytest", file: "test_sessions.py", page: "docs/time.md", passed: 3)
    }

    @Test func theNodeExamplePasses() throws {
        try #require(Self.have("node"), "the Node example needs node (18 or later, for fetch)")
        let dir = try Self.workspace(example: "suite-node", file: "larder.test.mjs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try Self.run(["node", "--test", "larder.test.mjs"], in: dir)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("# pass 2"), "\(result.output)")
    }
}
