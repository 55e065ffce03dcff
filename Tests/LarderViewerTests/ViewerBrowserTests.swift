import Foundation
import LarderTestSupport
import LarderWire
import Testing

/// The viewer in a real browser: headless Chromium driven by selenium
/// (Tests/browser/viewer_scenarios.py) against a real server seeded over
/// HTTP with Tests/browser/seed.json. Each test runs one group of the
/// script's scenarios and reports each failed scenario by name; a new
/// scenario is a Python function, with no change here. Screenshots go to
/// `.build/viewer-screenshots/`.
///
@Suite(.longBlockingLane, .serialized) struct ViewerBrowserTests {
    static let script = Repository.path("Tests/browser/viewer_scenarios.py")
    static let screenshots = Repository.path(".build/viewer-screenshots")

    /// PUTs every entry of seed.json, with `token` when the server wants one.
    static func seed(_ client: WireClient, token: String? = nil) throws {
        struct Entry: Decodable { let key: String; let contentType: String; let value: String }
        let data = try #require(FileManager.default.contents(atPath: Repository.path("Tests/browser/seed.json")))
        for entry in try JSONDecoder().decode([Entry].self, from: data) {
            let headers = token.map { [("Authorization", "Bearer " + $0)] } ?? []
            let answer = try client.put(entry.key, Array(entry.value.utf8), contentType: entry.contentType, headers: headers)
            #expect(answer.status == 201, "seeding \(entry.key): \(answer.status) \(answer.text)")
        }
    }

    /// Runs `group`'s scenarios against `port`; records one issue per failed scenario.
    static func run(group: String, port: Int, token: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try PythonRunner.require([("selenium", "selenium")])
        var arguments = [script, "--base-url", "http://127.0.0.1:\(port)", "--group", group, "--screenshots", screenshots]
        arguments.append("--page")  // the page scenarios too (data-testid hooks)
        if let token { arguments += ["--token", token] }
        // Past every scenario's waits (21 × 30 s when the page is broken outright).
        let result = try await PythonRunner.run(arguments, timeout: 1500)
        let outcomes = ScenarioOutcome.parse(result.stdout)
        #expect(!result.timedOut, "the browser scenarios ran past 1,500 s", sourceLocation: sourceLocation)
        #expect(!outcomes.isEmpty, "no scenario ran: \(result.stderr)", sourceLocation: sourceLocation)
        ScenarioOutcome.recordFailures(outcomes, group: group, sourceLocation: sourceLocation)
        #expect(result.status == 0 || outcomes.contains { !$0.ok }, "the script failed: \(result.stderr)",
                sourceLocation: sourceLocation)
    }

    /// Page loads without console errors, light and dark screenshots,
    /// ETag/304 and traversal over HTTP, and the page scenarios.
    @Test func theViewerInABrowser() async throws {
        let server = try TestServer()
        defer { server.stop() }
        try Self.seed(server.client())
        try await Self.run(group: "plain", port: server.port)
    }

    /// The binary copied alone into a temp folder and run from there (no
    /// Public/ near it, no --public-dir) serves a working viewer.
    @Test func aCopiedBinaryServesTheViewerInABrowser() async throws {
        let folder = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.copyItem(atPath: ChildServer.binaryPath, toPath: folder + "/larder")
        let child = try ChildServer(dataDirectory: nil, arguments: ["--ephemeral", "--log-level", "error"],
                                    environment: ["LARDER_PUBLIC_DIR": ""], executable: folder + "/larder", directory: folder)
        try Self.seed(child.client())
        try await Self.run(group: "standalone", port: child.port)
    }

    /// With --allow-faults: the Faults pane lists, adds and removes rules,
    /// and the Requests pane marks a faulted request with its rule.
    @Test func theFaultsPaneInABrowser() async throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        try Self.seed(server.client())
        try await Self.run(group: "faults", port: server.port)
    }

    /// With --token the page asks for it (token-form).
    @Test
    func theTokenFormInABrowser() async throws {
        let token = "browser-test-token"
        let server = try TestServer { $0.token = token }
        defer { server.stop() }
        try Self.seed(server.client(), token: token)
        try await Self.run(group: "token", port: server.port, token: token)
    }
}
