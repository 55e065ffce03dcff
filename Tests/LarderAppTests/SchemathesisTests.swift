import Foundation
import LarderTestSupport
import Testing

/// openapi.yaml is true of the server: schemathesis runs a bounded, seeded
/// set of generated requests against a real server and checks every
/// answer's status, content type, headers and body against the document.
/// Async: the run is a child process awaited off the cooperative pool, so
/// these minutes-long tests hold no thread and no turn of `.blockingLane`.
@Suite(.asyncLane) struct SchemathesisTests {
    /// schemathesis against a real server: a fixed seed, derandomized
    /// generation (no example database), one worker, the phases that need no links (examples, coverage,
    /// fuzzing), and these checks on every answer. `?wait` is clamped to 1 s
    /// by Tests/openapi/schemathesis_hooks.py so that no case parks for minutes.
    /// The server has no fault rules, so /faults answers 404 here.
    @Test func schemathesisFindsNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        var filters: [String] = []
        for path in OpenAPITests.notYetServed { filters += ["--exclude-path", path] }
        for id in OpenAPITests.neverFuzzedOperationIDs { filters += ["--exclude-operation-id", id] }
        try await Self.schemathesis(against: server, filters: filters, label: "schemathesis", timeout: 600)
    }

    /// The /faults operations fuzzed against a server started with
    /// --allow-faults: the rule sets, their validation and their views. Only
    /// /faults is run: the rules it writes fault every other path, but never
    /// /faults itself.
    @Test func schemathesisFindsNothingInFaults() async throws {
        let server = try TestServer { $0.allowFaults = true }
        defer { server.stop() }
        try await Self.schemathesis(against: server, filters: ["--include-path", "/faults"],
                              label: "schemathesis /faults", timeout: 600)
        // The route was there all along (not a run of 404s), and still answers.
        let response = try server.client().send("GET", "/faults")
        #expect(response.status == 200, "GET /faults after the run: \(response.status) \(response.text)")
    }

    /// Runs schemathesis with the settings above against `server`, limited
    /// by `filters` (schemathesis's operation filters), and expects it to
    /// pass every generated case. `timeout` only ends a run that hangs.
    /// Generated cases per operation: 20 in the test run (CI's time is
    /// counted), `LARDER_SCHEMATHESIS_EXAMPLES=100` for a longer search.
    static let examples = ProcessInfo.processInfo.environment["LARDER_SCHEMATHESIS_EXAMPLES"].flatMap { Int($0) } ?? 20

    static func schemathesis(against server: TestServer, filters: [String], label: String, timeout: Double) async throws {
        try PythonRunner.require([(module: "schemathesis", package: "schemathesis")])
        let workDirectory = TestServer.makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: workDirectory) }
        let arguments = [
            "-m", "schemathesis.cli", "run", OpenAPITests.spec,
            "--url", "http://127.0.0.1:\(server.port)",
            "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance",
            "--phases", "examples,coverage,fuzzing",
            "--max-examples", String(examples),
            "--seed", "20261122",
            // Derandomized: the same cases every run (and so no example database).
            "--generation-deterministic",
            "--workers", "1",
            "--request-timeout", "15",
            "--no-color",
        ] + filters
        let started = Date()
        let result = try await PythonRunner.run(arguments, environment: [
            "SCHEMATHESIS_HOOKS": Repository.path("Tests/openapi/schemathesis_hooks.py"),
            "NO_COLOR": "1",
        ], directory: workDirectory, timeout: timeout)
        let seconds = Date().timeIntervalSince(started)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let cases = lines.first { $0.contains(" generated,") }?.trimmingCharacters(in: .whitespaces) ?? "?"
        let summary = lines.last { $0.hasPrefix("=") && $0.contains(" in ") }?
            .trimmingCharacters(in: CharacterSet(charactersIn: "= ")) ?? "?"
        print("\(label): \(cases); \(summary) (\(String(format: "%.0f", seconds)) s in all)")
        #expect(!result.timedOut, "\(label) hung: no end in \(Int(timeout)) s")
        #expect(result.status == 0, "\(label) exited \(result.status):\n\(lines.suffix(150).joined(separator: "\n"))\n\(result.stderr)")
        #expect(cases.contains(" passed") && !cases.contains("failed"), "\(label): \(cases)")
    }
}
