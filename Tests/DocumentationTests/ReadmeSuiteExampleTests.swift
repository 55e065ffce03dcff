import Foundation
import LarderTestSupport
import Testing

/// The README's "Use it from your test suite" examples, each run as written
/// (shell with curl, pytest with requests, node:test with fetch) in a fresh
/// directory holding the fixture they assume, with the built `larder` first
/// on the PATH. Each starts and stops its own server, as a user's suite would.
@Suite struct ReadmeSuiteExampleTests {
    /// A working directory with `fixtures/users/1.json` and the example saved as `file`.
    static func workspace(example: String, file: String) throws -> String {
        let dir = TestServer.makeTempDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/fixtures/users", withIntermediateDirectories: true)
        try Data("{\"name\": \"Ada\"}".utf8).write(to: URL(fileURLWithPath: dir + "/fixtures/users/1.json"))
        try Data(try ReadmeExampleTests.block("example: \(example)").utf8).write(to: URL(fileURLWithPath: dir + "/" + file))
        return dir
    }

    /// Runs `command` in `directory` with `larder` on the PATH; its status
    /// and what it printed (stdout, then stderr).
    static func run(_ command: [String], in directory: String, timeout: Double = 60) throws -> (status: Int32, output: String) {
        let binDirectory = (ChildServer.binaryPath as NSString).deletingLastPathComponent
        let path = binDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try ProcessRunner.run("/usr/bin/env", command, environment: ["PATH": path, "PYTHONDONTWRITEBYTECODE": "1"],
                                           directory: directory, timeout: timeout)
        return (result.status, result.stdoutText + result.stderr)
    }

    static func have(_ tool: String) -> Bool {
        (try? run(["sh", "-c", "command -v \(tool)"], in: "/"))?.status == 0
    }

    @Test func theShellExampleSavesAndRestoresAState() throws {
        let dir = try Self.workspace(example: "suite-shell", file: "example.sh")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try Self.run(["bash", "example.sh"], in: dir)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output == (try ReadmeExampleTests.block("output: suite-shell")))
        // The ephemeral data directory (the log names it) went with the server.
        let log = try String(contentsOfFile: dir + "/larder.log", encoding: .utf8)
        let data = try #require(log.firstMatch(of: /with data in (\S+)/)?.1)
        #expect(data.contains("larder-ephemeral-"))
        #expect(!FileManager.default.fileExists(atPath: String(data)))
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

    @Test func theNodeExamplePasses() throws {
        try #require(Self.have("node"), "the Node example needs node (18 or later, for fetch)")
        let dir = try Self.workspace(example: "suite-node", file: "larder.test.mjs")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try Self.run(["node", "--test", "larder.test.mjs"], in: dir)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("# pass 2"), "\(result.output)")
    }
}
